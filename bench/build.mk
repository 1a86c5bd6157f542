# bench: rules added by its owner
