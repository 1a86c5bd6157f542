# preload: rules added by its owner
