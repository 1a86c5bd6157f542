# tests: rules added by its owner
