"""Certificates in the tests: authorities made for them (a plugged-in Istio CA, `cacerts`: root, intermediate
signing CA and its chain, Istio's plug-in format; a leaf under a root no istiod knows), and the simulated proxies'
own (which plane issued each, and an mTLS handshake between two, each side trusting only its istiod's root)."""

from __future__ import annotations

import base64
import datetime
import pathlib
import socket
import ssl
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _issue(subject: str | None, key, issuer: x509.Name | None, issuer_key, ca: bool, uri: str | None = None):
    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kf-istio-migrate tests")]
                     + ([x509.NameAttribute(NameOID.COMMON_NAME, subject)] if subject else []))
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer or name).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False),
                                        critical=True)
    if uri:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri)]),
                                        critical=True)
    return builder.sign(issuer_key or key, hashes.SHA256())


def plugged_ca_secret(directory: pathlib.Path) -> dict:
    """A root and an intermediate CA written to directory (root-cert.pem, ca-cert.pem, ca-key.pem, cert-chain.pem)
    and the `cacerts` Secret for the kubeflow namespace that plugs them into istiod."""
    root_key, ca_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    root = _issue("Test Root CA", root_key, None, None, ca=True)
    ca = _issue("Test Intermediate CA", ca_key, root.subject, root_key, ca=True)
    files = {"root-cert.pem": _pem(root), "ca-cert.pem": _pem(ca), "ca-key.pem": _key_pem(ca_key),
             "cert-chain.pem": _pem(ca) + _pem(root)}
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (directory / name).write_bytes(data)
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cacerts", "namespace": "kubeflow"},
            "data": {name: base64.b64encode(data).decode() for name, data in files.items()}}


def different_root_leaf(directory: pathlib.Path, uri: str) -> pathlib.Path:
    """A workload certificate for uri under a fresh root (cert-chain.pem, key.pem, ca-root.pem, like the simulator's
    per-proxy directories): a peer of another mesh."""
    root_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    root = _issue("Another Root CA", root_key, None, None, ca=True)
    leaf = _issue(None, key, root.subject, root_key, ca=False, uri=uri)
    (directory / "cert-chain.pem").write_bytes(_pem(leaf))
    (directory / "key.pem").write_bytes(_key_pem(key))
    (directory / "ca-root.pem").write_bytes(_pem(root))
    return directory


def certificate_dirs(events, certs: pathlib.Path, plane: str) -> list[pathlib.Path]:
    """The simulated proxies' certificate directories whose certificate the istiods of plane issued."""
    return [certs / e["pod"].replace("/", "-") for e in events
            if e["event"] == "certificate" and e["istiod"].startswith(f"{plane}/")]


def handshake(server: pathlib.Path, client: pathlib.Path, client_root: pathlib.Path | None = None) -> str:
    """An mTLS handshake between two proxies' certificates, each side trusting only the root its own istiod handed
    it (ca-root.pem); returns the client identity the server saw. Raises ssl.SSLError when trust fails."""
    def context(side: int, d: pathlib.Path, root: pathlib.Path) -> ssl.SSLContext:
        ctx = ssl.SSLContext(side)
        ctx.check_hostname = False  # Istio peers are SPIFFE URIs, checked below, not host names
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_cert_chain(d / "cert-chain.pem", d / "key.pem")
        ctx.load_verify_locations(root)
        return ctx

    a, b = socket.socketpair()
    serving = context(ssl.PROTOCOL_TLS_SERVER, server, server / "ca-root.pem").wrap_socket(
        a, server_side=True, do_handshake_on_connect=False)  # the handshake runs in serve(), beside the client
    seen: dict = {}

    def serve():
        try:
            serving.do_handshake()
            seen["peer"] = [v for k, v in serving.getpeercert().get("subjectAltName", ()) if k == "URI"][0]
            serving.sendall(b"ok")
        except (ssl.SSLError, OSError) as err:
            seen["error"] = err
        finally:
            serving.close()

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with context(ssl.PROTOCOL_TLS_CLIENT, client, client_root or client / "ca-root.pem").wrap_socket(b) as c:
            assert c.recv(2) == b"ok"
    finally:
        thread.join(10)
    if "error" in seen:
        raise seen["error"]
    return seen["peer"]


def old_and_new_shake_hands(events, certs: pathlib.Path) -> tuple[list[pathlib.Path], list[pathlib.Path]]:
    """The certificate directories the old plane (kubeflow) and the new one (istio-system) issued, once a certificate
    of each has completed an mTLS handshake with the other both ways."""
    old, new = certificate_dirs(events, certs, "kubeflow"), certificate_dirs(events, certs, "istio-system")
    assert old and new
    assert handshake(old[0], new[-1]).startswith("spiffe://cluster.local/ns/")
    assert handshake(new[-1], old[0]).startswith("spiffe://cluster.local/ns/")
    return old, new
