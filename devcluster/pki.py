"""Certificates and keys for the embedded cluster: one CA, the apiserver's serving cert, the service-account key."""

from __future__ import annotations

import datetime
import ipaddress
import pathlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

_VALIDITY = datetime.timedelta(days=3650)


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _write_key(key: rsa.RSAPrivateKey, path: pathlib.Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _cert(subject: str, key, issuer_name: x509.Name, issuer_key, *, ca: bool, sans=()) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(issuer_name).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + _VALIDITY)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def ensure(pki_dir: pathlib.Path, apiserver_ips: list[str]) -> None:
    """Create ca.{crt,key}, apiserver.{crt,key} and sa.{key,pub} once; later calls keep them (restart on same data)."""
    if (pki_dir / "sa.pub").is_file():
        return
    pki_dir.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kfistio-embedded-ca")])
    ca = _cert("kfistio-embedded-ca", ca_key, ca_name, ca_key, ca=True)
    _write_key(ca_key, pki_dir / "ca.key")
    (pki_dir / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))

    sans = [x509.DNSName(n) for n in ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                      "kubernetes.default.svc.cluster.local")]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in apiserver_ips]
    server_key = _key()
    server = _cert("kube-apiserver", server_key, ca_name, ca_key, ca=False, sans=sans)
    _write_key(server_key, pki_dir / "apiserver.key")
    (pki_dir / "apiserver.crt").write_bytes(server.public_bytes(serialization.Encoding.PEM))

    sa_key = _key()
    _write_key(sa_key, pki_dir / "sa.key")
    (pki_dir / "sa.pub").write_bytes(sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
