# hooks: rules added by its owner
