"""The transport role: Debian's Postfix with its own configuration directory (``WORK/transport``),
never ``/etc/postfix`` and never the system service.

    SMTP (loopback) ─▶ smtpd ─▶ cleanup (header/body checks) ─▶ queue ─▶ qmgr ─▶ lmtp ─▶ Dovecot

Postfix's ``master`` must be root (it refuses otherwise): it runs in the foreground (``-d``) in a
session of its own with ``-c WORK/transport``, and starts every other Postfix program as the
service user (``mail_owner``), none chrooted. Its own queue (``WORK/transport/queue``) and data
directory (``…/data``), its log in ``WORK/transport/postfix.log`` (postlogd; no syslog needed).

Listeners (``inet_interfaces`` is 127.0.0.1, each service bound to its port in master.cf):
SMTP (STARTTLS offered when TLS is on), and with TLS a submission port (STARTTLS required, then
AUTH through the mailbox Dovecot's auth socket) and an SMTPS port (implicit TLS, AUTH). Only the
provisioned addresses are accepted (``virtual_mailbox_maps``; others: 550 at RCPT).
"""

from __future__ import annotations

import grp
import os
from dataclasses import dataclass
from pathlib import Path

from caplab.systems.mail import content
from caplab.systems.mail.errors import MailError
from caplab.systems.mail.osuser import ServiceUser
from caplab.systems.mail.processes import Server
from caplab.systems.mail.tls import HOSTNAME, Certificate
from caplab.systems.mail.users import DOMAIN, address

MASTER = "/usr/lib/postfix/sbin/master"
QUEUE_DIRS = (
    "active",
    "bounce",
    "corrupt",
    "defer",
    "deferred",
    "flush",
    "hold",
    "incoming",
    "saved",
    "trace",
)


@dataclass(frozen=True)
class TransportPorts:
    smtp: int
    submission: int | None
    smtps: int | None


def instance(home: Path) -> Server:
    return Server(
        name="postfix (transport)",
        command=(MASTER, "-d", "-c", str(home)),
        config=home,
        pid_file=home / "server.pid",
        log_file=home / "master.log",
    )


def require_root() -> None:
    if os.geteuid() != 0:
        raise MailError(
            "Postfix's master runs only as root (it starts its other programs as the unprivileged "
            "caplab-mail): run `caplab systems start mail` as root"
        )


def prepare(home: Path, user: ServiceUser) -> None:
    """The queue as ``postfix-files`` lays it out: the queue directory root's, its subdirectories
    the mail owner's (``maildrop`` and ``public`` also the setgid group's), the data directory
    the mail owner's."""
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o755)
    queue = home / "queue"
    queue.mkdir(exist_ok=True)
    os.chmod(queue, 0o755)
    for name in QUEUE_DIRS:
        user.make_dir(queue / name, 0o700)
    user.make_dir(queue / "private", 0o700)
    setgid = _setgid_gid(user)
    for name, mode in (("maildrop", 0o730), ("public", 0o710)):
        path = user.make_dir(queue / name, mode)
        if user.uid is not None:
            os.chown(path, user.uid, setgid)
    (queue / "pid").mkdir(exist_ok=True)
    user.make_dir(home / "data", 0o700)
    log = home / "postfix.log"
    log.touch()


def _setgid_gid(user: ServiceUser) -> int:
    try:
        return grp.getgrnam("postdrop").gr_gid
    except KeyError:
        return user.gid if user.gid is not None else os.getgid()


def write_config(
    home: Path,
    user: ServiceUser,
    ports: TransportPorts,
    lmtp_port: int,
    users: list[str],
    tls: Certificate | None,
    auth_socket: Path,
    content_rules: int,
    max_connections: int,
) -> None:
    """main.cf, master.cf, the accepted addresses and the content-check tables; at most
    ``max_connections`` processes per service (smtpd: one per client connection)."""
    (home / "mailboxes").write_text("".join(f"{address(u)} {u}\n" for u in users))
    (home / "header_checks").write_text(content.header_checks(content_rules))
    (home / "body_checks").write_text(content.body_checks(content_rules))
    (home / "main.cf").write_text(_main_cf(home, user, lmtp_port, tls, auth_socket, max_connections))
    (home / "master.cf").write_text(_master_cf(ports))


def _main_cf(
    home: Path, user: ServiceUser, lmtp_port: int, tls: Certificate | None, auth: Path, processes: int
) -> str:
    setgid = grp.getgrgid(_setgid_gid(user)).gr_name
    tls_lines = ""
    if tls is not None:
        tls_lines = f"""smtpd_tls_cert_file = {tls.cert}
smtpd_tls_key_file = {tls.key}
smtpd_tls_security_level = may
smtpd_tls_auth_only = yes
"""
    return f"""# written by caplab.systems.mail (transport role); regenerated at every start
compatibility_level = 3.6
queue_directory = {home / "queue"}
data_directory = {home / "data"}
mail_owner = {user.name}
setgid_group = {setgid}
maillog_file = {home / "postfix.log"}
maillog_file_prefixes = {home}
myhostname = {HOSTNAME}
mydomain = {DOMAIN}
myorigin = {DOMAIN}
mydestination =
local_transport = error:local delivery is disabled
alias_maps =
alias_database =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
default_process_limit = {processes}
smtpd_peername_lookup = no
biff = no
append_dot_mydomain = no
virtual_mailbox_domains = {DOMAIN}
virtual_mailbox_maps = texthash:{home / "mailboxes"}
virtual_transport = lmtp:inet:127.0.0.1:{lmtp_port}
smtpd_relay_restrictions = permit_mynetworks, permit_sasl_authenticated, reject_unauth_destination
header_checks = regexp:{home / "header_checks"}
body_checks = regexp:{home / "body_checks"}
message_size_limit = 52428800
body_checks_size_limit = 52428800
smtpd_sasl_type = dovecot
smtpd_sasl_path = {auth}
{tls_lines}"""


def _master_cf(ports: TransportPorts) -> str:
    tls_services = ""
    auth = "-o smtpd_sasl_auth_enable=yes -o smtpd_relay_restrictions=permit_sasl_authenticated,reject"
    if ports.submission is not None:
        tls_services += (
            f"127.0.0.1:{ports.submission} inet n - n - - smtpd -o syslog_name=postfix/submission "
            f"-o smtpd_tls_security_level=encrypt {auth}\n"
        )
    if ports.smtps is not None:
        tls_services += (
            f"127.0.0.1:{ports.smtps} inet n - n - - smtpd -o syslog_name=postfix/smtps "
            f"-o smtpd_tls_wrappermode=yes {auth}\n"
        )
    return f"""# written by caplab.systems.mail (transport role); regenerated at every start
# service type private unpriv chroot wakeup maxproc command
127.0.0.1:{ports.smtp} inet n - n - - smtpd
{tls_services}pickup unix n - n 60 1 pickup
cleanup unix n - n - 0 cleanup
qmgr unix n - n 300 1 qmgr
tlsmgr unix - - n 1000? 1 tlsmgr
rewrite unix - - n - - trivial-rewrite
bounce unix - - n - 0 bounce
defer unix - - n - 0 bounce
trace unix - - n - 0 bounce
verify unix - - n - 1 verify
flush unix n - n 1000? 0 flush
proxymap unix - - n - - proxymap
smtp unix - - n - - smtp
relay unix - - n - - smtp
showq unix n - n - - showq
error unix - - n - - error
retry unix - - n - - error
discard unix - - n - - discard
lmtp unix - - n - - lmtp
anvil unix - - n - 1 anvil
scache unix - - n - 1 scache
postlog unix-dgram n - n - 1 postlogd
"""
