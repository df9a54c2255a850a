"""The one error the mail system raises: a step that failed, in words that name it."""


class MailError(RuntimeError):
    """A server did not start, a port is taken, a tool is missing…: one clear line for the user."""
