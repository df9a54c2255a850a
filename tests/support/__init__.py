"""Helpers shared by the tests: importable as ``support.…`` (tests/ is on the path)."""
