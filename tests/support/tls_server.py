"""An HTTPS server on loopback for the TLS tests: a CA made for the test signs a certificate for
``localhost`` and 127.0.0.1, and Python's ``ssl`` serves HTTP/1.1 with keep-alive behind it
(a request that says ``Connection: close`` gets that answer and the connection ends)."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    """PEM files: the CA's certificate (what ``--cacert`` takes), the server's chain and key."""

    ca_file: Path
    cert_file: Path
    key_file: Path


def make_pki(directory: Path) -> Pki:
    """A CA and a server certificate for ``localhost`` and 127.0.0.1 signed by it, valid a day."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "caplab test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    pki.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    pki.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pki.key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return pki


class _HttpsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), _OkHandler)
        self.context = context

    def get_request(self) -> tuple[socket.socket, object]:
        sock, address = super().get_request()
        # The handshake runs on the connection's own thread, at its first read.
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address


class _OkHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        closing = self.headers.get("Connection", "").lower() == "close"
        head = "Connection: close\r\n" if closing else ""
        self.wfile.write(f"HTTP/1.1 200 OK\r\n{head}Content-Length: 3\r\n\r\nok\n".encode())
        self.wfile.flush()
        self.close_connection = closing

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def https_server(pki: Pki) -> Iterator[str]:
    """Serves HTTPS with the test certificate; yields its URL (``https://127.0.0.1:PORT/``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.cert_file, pki.key_file)
    server = _HttpsServer(context)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
