# format: rules added by its owner
