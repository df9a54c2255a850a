"""Reference systems under test: small but real servers whose behaviour is known."""
