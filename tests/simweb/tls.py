"""A self-signed certificate for the simulated HTTPS hosts.

Generated at start-up with the ``cryptography`` package (an EC P-256 key:
fast to make). Scrapy does not verify certificates by default; clients that
do can trust ``SimulatedWeb.certificate_path`` as a CA file.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from functools import lru_cache
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_VALIDITY = datetime.timedelta(days=30)


@lru_cache(maxsize=8)
def make_certificate(hosts: tuple[str, ...]) -> tuple[bytes, bytes]:
    """(certificate PEM, private key PEM) valid for hosts and 127.0.0.1."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "scrapy-iri simulated web")])
    now = datetime.datetime.now(datetime.timezone.utc)
    alt_names: list[x509.GeneralName] = [x509.DNSName(h) for h in hosts]
    alt_names += [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = certificate.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert_pem, key_pem


class ServerTLS:
    """The server-side SSL context, with its PEM files in a temporary dir."""

    def __init__(self, hosts: tuple[str, ...]) -> None:
        cert_pem, key_pem = make_certificate(hosts)
        self._dir = tempfile.TemporaryDirectory(prefix="simweb-tls-")
        self.certificate_pem = cert_pem
        self.certificate_path = str(Path(self._dir.name, "cert.pem"))
        key_path = Path(self._dir.name, "key.pem")
        Path(self.certificate_path).write_bytes(cert_pem)
        key_path.write_bytes(key_pem)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(self.certificate_path, str(key_path))
        self.context.set_alpn_protocols(["http/1.1"])

    def close(self) -> None:
        self._dir.cleanup()
