"""TLS for a job that spans hosts: a per-job CA, node 0's server certificate, SSL contexts.

`aegis run --nnodes N --node-rank 0` makes a fresh CA for the job (EC P-256, never written
anywhere but a 0600 file nats-server reads) and one server certificate signed by it, valid for
the names and addresses other nodes reach node 0 by. nats-server, the gRPC credential service
and the node rendezvous all present that certificate; every client trusts that CA alone (it is
pinned through the join secret: docs/multihost.md, "What crosses the wire"). Clients present
no certificate: they authenticate inside the channel (NATS user JWTs, the bootstrap token and
incarnation, the join token).
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import secrets
import ssl
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from aegis.runtime.errors import TransportError

# a job's certificates outlive any job (a run that lasts longer restarts with fresh ones);
# they start an hour back so that a node whose clock is behind still accepts them
VALIDITY = datetime.timedelta(days=365)
CLOCK_SKEW = datetime.timedelta(hours=1)


class _SslEofNoise(logging.Filter):
    """asyncio warns whenever a TLS peer closes a stream (a StreamReaderProtocol returns True
    from eof_received, which TLS ignores): harmless, and said at every job end."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "eof_received() has no effect when using ssl" not in record.getMessage()


# any process that speaks TLS imports this module: its asyncio log stays quiet about that
logging.getLogger("asyncio").addFilter(_SslEofNoise())


class TlsError(TransportError):
    """A certificate or key cannot be made, read or used (the message says which)."""


@dataclass(frozen=True)
class ServerIdentity:
    """A server's certificate and private key, PEM (the key never leaves node 0)."""

    cert_pem: bytes
    key_pem: bytes = field(repr=False)

    def write(self, directory: Path) -> tuple[Path, Path]:
        """Write `server.pem` and `server.key` (0600) into `directory`; their paths."""
        cert, key = directory / "server.pem", directory / "server.key"
        for path, data in ((cert, self.cert_pem), (key, self.key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        return cert, key


@dataclass(frozen=True)
class JobTls:
    """A job's CA certificate and node 0's server identity signed by it."""

    ca_pem: bytes
    server: ServerIdentity
    names: tuple[str, ...]  # the DNS names and IP addresses the server certificate holds

    @classmethod
    def generate(cls, names: Iterable[str], label: str = "aegis job") -> JobTls:
        """A fresh CA and a server certificate valid for `names` (host names or IPs)."""
        wanted = tuple(dict.fromkeys(n for n in names if n))
        if not wanted:
            raise TlsError("a server certificate needs at least one name or address")
        now = datetime.datetime.now(datetime.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name(
            [x509.NameAttribute(NameOID.COMMON_NAME, f"{label} CA {secrets.token_hex(4)}")]
        )
        ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
        ca = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - CLOCK_SKEW)
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_key_usage(ca=True), critical=True)
            .add_extension(ca_ski, critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        leaf = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, wanted[0])]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - CLOCK_SKEW)
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(ca=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName(_alt_names(wanted)), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
                critical=False,
            )
            .sign(ca_key, hashes.SHA256())
        )
        pem = serialization.Encoding.PEM
        key_pem = key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        identity = ServerIdentity(leaf.public_bytes(pem), key_pem)
        return cls(ca.public_bytes(pem), identity, wanted)

    def server_context(self) -> ssl.SSLContext:
        """A server-side context presenting node 0's certificate (TLS 1.2 at least)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        # the ssl module loads a key from a file only: a private temp dir, gone at once
        with tempfile.TemporaryDirectory(prefix="aegis-tls-") as work:
            cert, key = self.server.write(Path(work))
            ctx.load_cert_chain(cert, key)
        return ctx


def client_context(ca_pem: bytes | str) -> ssl.SSLContext:
    """A client context that trusts `ca_pem` alone and checks the server's name."""
    text = ca_pem.decode("ascii") if isinstance(ca_pem, bytes) else ca_pem
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_verify_locations(cadata=text)
    except (ssl.SSLError, ValueError) as exc:
        raise TlsError(f"the job's CA certificate cannot be read: {exc}") from None
    return ctx


def nats_tls_options(ca_pem: bytes | str | None) -> dict[str, Any]:
    """nats-py's connect options for a server whose certificate the CA `ca_pem` signed: TLS
    from the first byte, as the server's `handshake_first` asks (none without a CA)."""
    if not ca_pem:
        return {}
    return {"tls": client_context(ca_pem), "tls_handshake_first": True}


def unverified_client_context() -> ssl.SSLContext:
    """A client context that accepts any server certificate: only for the rendezvous's first
    exchange, whose answer is checked with the join secret instead (docs/multihost.md)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def ca_fingerprint(ca_pem: bytes) -> str:
    """The SHA-256 of the CA certificate's DER encoding, hex (what a join MAC binds)."""
    try:
        cert = x509.load_pem_x509_certificate(ca_pem)
    except ValueError as exc:
        raise TlsError(f"not a PEM certificate: {exc}") from None
    return cert.fingerprint(hashes.SHA256()).hex()


def _key_usage(ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _alt_names(names: Iterable[str]) -> list[x509.GeneralName]:
    out: list[x509.GeneralName] = []
    for name in names:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            out.append(x509.DNSName(name))
    return out
