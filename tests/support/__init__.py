"""Helpers shared by the test suite: servers, clients, fixtures' building blocks, checkers."""
