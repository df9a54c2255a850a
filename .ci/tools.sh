# Sourced by .ci/run: the Debian packages the tests drive for real, installed if missing —
# PostgreSQL's server binaries (tests start their own clusters with initdb, never the system's),
# OpenLDAP's slapd and its tools (idsync's directory), Chromium (the report is opened in it
# headless), fio (storage baselines and volume checks), and the kernel tools the hardware profiles
# use (ip/tc, losetup, mkfs.ext4, nsenter, iptables), Prometheus's node_exporter (remote hosts' figures;
# the tests start their own on a loopback port), fuse3 (fusermount3: device models are served
# through FUSE), Postfix and Dovecot (the mail reference system starts its own instances with their
# own configuration, never the system's), and Patroni and etcd (pgha starts its own, as ordinary
# processes; policy-rc.d keeps Debian's etcd service from starting at install), and nginx (a test
# starts its own worker as a server cheaper than the generator; its service is kept from starting
# the same way). Idempotent.
missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v pgbench >/dev/null || missing+=(postgresql-contrib)
command -v slapd >/dev/null || [ -x /usr/sbin/slapd ] || missing+=(slapd)
command -v ldapsearch >/dev/null || missing+=(ldap-utils)
command -v chromium >/dev/null || missing+=(chromium)
command -v fio >/dev/null || missing+=(fio)
command -v fusermount3 >/dev/null || missing+=(fuse3)  # device models: the daemon's FUSE mount
command -v strace >/dev/null || missing+=(strace)
command -v openssl >/dev/null || missing+=(openssl)  # the mail system's self-signed certificate
command -v tc >/dev/null || missing+=(iproute2)
command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
command -v nsenter >/dev/null || missing+=(util-linux)
command -v iptables >/dev/null || missing+=(iptables)  # a link's round trip: NFQUEUE rules
command -v prometheus-node-exporter >/dev/null || missing+=(prometheus-node-exporter)
[ -x /usr/sbin/postfix ] || missing+=(postfix)
[ -x /usr/sbin/dovecot ] || missing+=(dovecot-core)
[ -e /usr/lib/dovecot/imap ] || missing+=(dovecot-imapd)
[ -e /usr/lib/dovecot/lmtp ] || missing+=(dovecot-lmtpd)
[ -e /usr/lib/dovecot/pop3 ] || missing+=(dovecot-pop3d)
[ -x /usr/bin/patroni ] || missing+=(patroni)  # pgha: its own Patroni per node, never the service
[ -x /usr/bin/etcd ] || missing+=(etcd-server)  # pgha's consensus store, its own instance
[ -x /usr/sbin/nginx ] || missing+=(nginx-light)  # a server cheaper than the generator, its own worker
if [ ${#missing[@]} -gt 0 ]; then
    # The packages must not start or create system services: the tests run their own servers.
    mkdir -p /etc/postgresql-common
    grep -qs '^create_main_cluster' /etc/postgresql-common/createcluster.conf \
        || echo 'create_main_cluster = false' >> /etc/postgresql-common/createcluster.conf
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    # Postfix's package asks for a mailer type: none, so it writes no system main.cf to serve.
    echo 'postfix postfix/main_mailer_type select No configuration' | debconf-set-selections
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    rm -f /usr/sbin/policy-rc.d
fi
export CAPLAB_REQUIRE_CHROMIUM=1
export CAPLAB_REQUIRE_FIO=1
export CAPLAB_REQUIRE_PG=1
export CAPLAB_REQUIRE_NODE_EXPORTER=1
# The seed studies' end-to-end tests and the hardware-profile tests: CI runs as root with cgroups,
# and installs slapd, Postfix and Dovecot above, so none of them may skip (tests/support/require.py).
export CAPLAB_REQUIRE_PROFILES=1
export CAPLAB_REQUIRE_SLAPD=1
export CAPLAB_REQUIRE_MAIL=1
export CAPLAB_REQUIRE_PATRONI=1  # patroni and etcd-server, installed above
export CAPLAB_REQUIRE_TOOLS=1  # strace and fio, installed above
export CAPLAB_REQUIRE_NGINX=1  # nginx-light, installed above
