# examples: rules added by its owner
