"""Studies: the runner that walks the factor matrix, and what it needs per cell."""
