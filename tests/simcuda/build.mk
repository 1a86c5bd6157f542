# tests/simcuda: rules added by its owner
