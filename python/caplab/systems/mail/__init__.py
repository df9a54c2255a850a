"""mail: a real mail system for caplab's user-and-session studies (the Exchange 2007 role
consolidation paper, seeds/003), in three roles a study attributes CPU and memory to:

    client ─SMTP/submission/SMTPS─▶ transport: Postfix (header/body checks) ─LMTP─▶ mailbox: Dovecot
    client ─IMAP/IMAPS/POP3/POP3S─▶ access: Dovecot proxy ─IMAP/POP3─▶ mailbox: Dovecot (Maildir)

Debian's Postfix and Dovecot, each started as ordinary processes with its own configuration in
the work directory (never the system services, never /etc), on loopback ports; ``--users N``
mailboxes ``user1…userN@caplab.test`` with passwords in ``WORK/passwords`` (0600).

From Python::

    system = MailSystem(Path("/var/tmp/mail"))
    status = system.start(Settings(Path("/var/tmp/mail"), users=100))
    status["ports"]["smtp"], status["ports"]["proxy"]
    system.role_pids()      # {"transport": [master, smtpd…], "access": […], "mailbox": […]}
    system.delivered()      # {"user1": 3, …}: Maildir files per user
    system.stop()

From a shell: ``python -m caplab.systems.mail start|status|stop`` (see cli.py). A study's roles
match each role's master by its configuration path (``role_matches()``): ``WORK/transport``,
``WORK/access/dovecot.conf``, ``WORK/mailbox/dovecot.conf``.
"""

from caplab.systems.mail.errors import MailError
from caplab.systems.mail.system import ROLES, MailSystem, Ports, Settings

__all__ = ["ROLES", "MailError", "MailSystem", "Ports", "Settings"]
