"""caplab turns load tests into capacity plans."""

__version__ = "0.1.0"
