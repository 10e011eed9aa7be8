"""The per-job CA and node 0's certificate, and the TLS of nats-server and the credential
service: a client that trusts the job's CA gets in; one that trusts another CA, or speaks
plain TCP, does not."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest
from cryptography import x509

from aegis.runtime.errors import BusError, CredentialsUnavailable
from aegis.runtime.transport.auth import Operator
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.grpc_credentials import (
    CredentialServer,
    CredentialService,
    request_credentials,
    tls_server_credentials,
)
from aegis.runtime.transport.nats_server import NatsServer, can_connect
from aegis.runtime.transport.tls import JobTls, TlsError, ca_fingerprint, client_context


def test_the_certificate_names_what_it_was_made_for() -> None:
    tls = JobTls.generate(["10.77.0.1", "gpu07", "127.0.0.1", "gpu07"])
    leaf = x509.load_pem_x509_certificate(tls.server.cert_pem)
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["10.77.0.1", "127.0.0.1"]
    assert san.get_values_for_type(x509.DNSName) == ["gpu07"]
    ca = x509.load_pem_x509_certificate(tls.ca_pem)
    leaf.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert b"PRIVATE KEY" not in tls.ca_pem + tls.server.cert_pem
    assert "key_pem" not in repr(tls.server)


def test_every_job_gets_its_own_ca() -> None:
    first, second = JobTls.generate(["h"]), JobTls.generate(["h"])
    assert ca_fingerprint(first.ca_pem) != ca_fingerprint(second.ca_pem)


def test_bad_material_is_refused_clearly() -> None:
    with pytest.raises(TlsError, match="at least one name"):
        JobTls.generate([])
    with pytest.raises(TlsError, match="CA certificate cannot be read"):
        client_context("not a certificate")
    with pytest.raises(TlsError, match="not a PEM certificate"):
        ca_fingerprint(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")


async def _handshake(port: int, ctx: ssl.SSLContext, name: str) -> None:
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname=name)
    writer.close()


async def test_a_client_checks_the_name_and_the_ca() -> None:
    tls = JobTls.generate(["127.0.0.1", "node0"])
    server = await asyncio.start_server(
        lambda r, w: w.close(), "127.0.0.1", 0, ssl=tls.server_context()
    )
    port = server.sockets[0].getsockname()[1]
    try:
        await _handshake(port, client_context(tls.ca_pem), "node0")
        with pytest.raises(ssl.SSLCertVerificationError, match="match"):
            await _handshake(port, client_context(tls.ca_pem), "node1")
        other = JobTls.generate(["127.0.0.1"])
        with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer"):
            await _handshake(port, client_context(other.ca_pem), "node0")
    finally:
        server.close()
        await server.wait_closed()


async def test_nats_over_tls_admits_only_clients_trusting_the_job_ca() -> None:
    tls = JobTls.generate(["127.0.0.1"])
    op = Operator()
    job = op.create_job_account("team", "train")
    async with NatsServer(op, [job], tls=tls) as server:
        assert server.url.startswith("tls://127.0.0.1:")
        creds = job.controller_credentials()
        assert await can_connect(server.url, creds, ca_pem=tls.ca_pem)
        bus = await Bus.connect(server.url, creds, tls_ca=tls.ca_pem, timeout=5)
        assert bus.connected
        await bus.close()
        other = JobTls.generate(["127.0.0.1"])
        with pytest.raises(BusError, match="CERTIFICATE_VERIFY_FAILED"):
            await Bus.connect(server.url, creds, tls_ca=other.ca_pem, timeout=3)
        plain = server.url.replace("tls://", "nats://")
        assert not await can_connect(plain, creds)  # the server wants TLS from the first byte


async def test_credentials_over_tls_need_the_job_ca() -> None:
    tls = JobTls.generate(["127.0.0.1"])
    job = Operator().create_job_account("team", "train")
    service = CredentialService("tls://127.0.0.1:4222")
    service.add_job(job)
    creds = tls_server_credentials(tls.server)
    async with CredentialServer(service, server_credentials=creds) as grpc_server:
        ask: dict[str, Any] = {
            "namespace": "team",
            "job": "train",
            "pod_name": "train-worker-0",
            "proof": job.bootstrap_token,
        }
        issued = await request_credentials(
            grpc_server.address, **ask, incarnation="a", ca_pem=tls.ca_pem
        )
        assert issued.nats_url == "tls://127.0.0.1:4222"
        other = JobTls.generate(["127.0.0.1"])
        with pytest.raises(CredentialsUnavailable):
            await request_credentials(
                grpc_server.address,
                **ask,
                incarnation="b",
                ca_pem=other.ca_pem,
                attempts=2,
                timeout=1.0,
            )
        with pytest.raises(CredentialsUnavailable):  # plain text to a TLS server
            await request_credentials(
                grpc_server.address, **ask, incarnation="c", attempts=2, timeout=1.0
            )
