"""The text written from the data: observations (limits, platform, scaling, anomalies, searches,
the generator) and the recommendation with its advice."""
