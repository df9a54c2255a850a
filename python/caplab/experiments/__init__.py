"""What a cell of a study runs, one module per kind behind `base.Experiment`."""
