"""The two Dovecot instances, each an ordinary ``dovecot -F -c CONF`` run as the service user
(rootless: no chroot, every service as that user), with its own directory:

- **mailbox** (``WORK/mailbox/``): LMTP on a loopback port (Postfix delivers there), Maildir
  mailboxes under ``--mail-dir`` (``MAILDIR/userN/{new,cur,tmp}``), IMAP on a loopback port, and
  an auth socket (``run/auth-client``) Postfix's submission service authenticates through.
- **access** (``WORK/access/``): the client access role, an IMAP and POP3 *proxy*: it checks the
  password itself (the same passdb) and then logs in to the mailbox instance as that user
  (``proxy=y``), as Exchange's client access servers front its mailbox servers. IMAP (STARTTLS),
  IMAPS, POP3 and POP3S when TLS is on.

Every simulated user logs in from the same loopback address, so Dovecot's brute-force defences
(a 2 s delay on a failed login, doubling per failure from that address up to 15 s) are off: a
test of wrong passwords would otherwise slow every user after it.

Each instance's processes carry its ``instance_name`` in their titles (``caplab-mailbox/imap``,
``caplab-access/imap-login``…) and its master's command line names its configuration file
(``WORK/mailbox/dovecot.conf`` or ``WORK/access/dovecot.conf``): either tells the two apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from caplab.systems.mail.osuser import ServiceUser
from caplab.systems.mail.processes import Server
from caplab.systems.mail.tls import Certificate

DOVECOT = "/usr/sbin/dovecot"


@dataclass(frozen=True)
class MailboxPorts:
    lmtp: int
    imap: int
    pop3: int


@dataclass(frozen=True)
class AccessPorts:
    imap: int
    pop3: int
    imaps: int | None
    pop3s: int | None


def instance(home: Path, role: str, user: ServiceUser) -> Server:
    conf = home / "dovecot.conf"
    return Server(
        name=f"dovecot ({role})",
        command=(DOVECOT, "-F", "-c", str(conf)),
        config=conf,
        pid_file=home / "server.pid",
        log_file=home / "dovecot.log",
        user=user,
    )


def prepare(home: Path, user: ServiceUser) -> None:
    """The instance's directories: ``run`` (base_dir: sockets, its own master.pid) and ``state``."""
    user.make_dir(home, 0o755)
    user.make_dir(home / "run", 0o755)  # Dovecot wants its base_dir world-readable
    user.make_dir(home / "state", 0o700)
    log = home / "dovecot.log"
    log.touch()
    user.own(log)


def _common(
    home: Path, role: str, user: ServiceUser, tls: Certificate | None, protocols: str, clients: int
) -> str:
    """What both instances share: paths, the service user everywhere, no brute-force delays, and
    ``clients`` sessions at once (each one an imap or pop3 process on the mailbox instance; the
    internal services that count processes — anvil, auth, stats — sized for all of them). The imap
    and pop3 services carry a process limit of their own (1,024 in Dovecot's built-in settings,
    which ``default_process_limit`` does not lift): the 1,025th user holding a session was refused."""
    ssl = f"ssl = yes\nssl_cert = <{tls.cert}\nssl_key = <{tls.key}\n" if tls else "ssl = no\n"
    return f"""# written by caplab.systems.mail ({role} role); regenerated at every start
instance_name = caplab-{role}
base_dir = {home / "run"}
state_dir = {home / "state"}
log_path = {home / "dovecot.log"}
protocols = {protocols}
listen = 127.0.0.1
{ssl}disable_plaintext_auth = no
auth_mechanisms = plain login
auth_username_format = %Ln
auth_cache_size = 0
auth_failure_delay = 0
default_internal_user = {user.name}
default_internal_group = {user.name}
default_login_user = {user.name}
mail_uid = {user.name}
mail_gid = {user.name}
first_valid_uid = 0
login_greeting = caplab {role} ready.
login_trusted_networks = 127.0.0.0/8
default_process_limit = {clients}
default_client_limit = {4 * clients}
service imap {{
  process_limit = {clients}
}}
service pop3 {{
  process_limit = {clients}
}}
service anvil {{
  chroot =
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    port = 0
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service pop3-login {{
  chroot =
  inet_listener pop3 {{
    port = 0
  }}
  inet_listener pop3s {{
    port = 0
  }}
}}
"""


HIGH_PERFORMANCE = """  service_count = 0
  process_min_avail = 2
  client_limit = {clients}
  vsz_limit = 1G
"""
"""A login service in Dovecot's high-performance mode (see ``access_config``)."""


def mailbox_config(
    home: Path, user: ServiceUser, mail_dir: Path, passdb: Path, ports: MailboxPorts, clients: int
) -> str:
    """The mailbox instance: LMTP in, Maildir on ``mail_dir``, IMAP and POP3 out (to the proxy)."""
    return (
        _common(home, "mailbox", user, None, "imap pop3 lmtp", clients)
        + f"""
mail_location = maildir:{mail_dir}/%n
mail_home = {mail_dir}/%n
passdb {{
  driver = passwd-file
  args = scheme=SSHA512 {passdb}
}}
userdb {{
  driver = static
  args = uid={user.name} gid={user.name} home={mail_dir}/%n
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {ports.imap}
  }}
}}
service pop3-login {{
  inet_listener pop3 {{
    address = 127.0.0.1
    port = {ports.pop3}
  }}
}}
service lmtp {{
  inet_listener lmtp {{
    address = 127.0.0.1
    port = {ports.lmtp}
  }}
}}
service auth {{
  unix_listener auth-client {{
    mode = 0666
  }}
}}
protocol lmtp {{
  postmaster_address = postmaster@caplab.test
}}
"""
    )


def access_config(
    home: Path,
    user: ServiceUser,
    tls: Certificate | None,
    passdb: Path,
    ports: AccessPorts,
    backend: MailboxPorts,
    clients: int,
) -> str:
    """The access instance: the same passwords checked here, then proxied to the mailbox
    instance's IMAP or POP3 port (chosen by protocol, ``%s``). Its login processes run in
    Dovecot's high-performance mode: a login process holds a proxied session (and its TLS) for as
    long as the client stays, so one process per connection (the default) would mean a process per
    user; here each serves up to ``clients``, one per core is kept ready."""
    backend_port = f"%{{if;%s;eq;pop3;{backend.pop3};{backend.imap}}}"
    secure = ""
    if ports.imaps is not None and ports.pop3s is not None:
        secure = f"""service imap-login {{
  inet_listener imaps {{
    address = 127.0.0.1
    port = {ports.imaps}
    ssl = yes
  }}
}}
service pop3-login {{
  inet_listener pop3s {{
    address = 127.0.0.1
    port = {ports.pop3s}
    ssl = yes
  }}
}}
"""
    return (
        _common(home, "access", user, tls, "imap pop3", clients)
        + f"""
passdb {{
  driver = passwd-file
  args = scheme=SSHA512 {passdb}
  override_fields = proxy=y host=127.0.0.1 port={backend_port}
}}
userdb {{
  driver = static
  args = uid={user.name} gid={user.name} home=/nonexistent
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {ports.imap}
  }}
{HIGH_PERFORMANCE.format(clients=clients)}}}
service pop3-login {{
  inet_listener pop3 {{
    address = 127.0.0.1
    port = {ports.pop3}
  }}
{HIGH_PERFORMANCE.format(clients=clients)}}}
{secure}"""
    )
