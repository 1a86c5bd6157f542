# viewer-export: rules added by its owner
