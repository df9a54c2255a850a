"""The results document (results.json) as typed data: its types, and how it is built from the
study as stored: cells, the matrix, capacities, scaling fits, the scenario and each trial over time."""
