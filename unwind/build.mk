# unwind: rules added by its owner
