"""The gRPC credential handout on real loopback gRPC: refusals, retries, no seed on the wire."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import logging
import os
import resource
import socket
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio

from aegis.runtime.errors import CredentialsRejected, CredentialsUnavailable
from aegis.runtime.transport.auth import JobAccount, Operator, UserCredentials, new_user_keypair
from aegis.runtime.transport.grpc_credentials import (
    FIELD_LIMITS,
    CredentialServer,
    CredentialService,
    Throttle,
    build_renewal,
    build_request,
    renew_credentials,
    request_credentials,
)
from aegis.runtime.transport.proto import credentials_pb2 as pb
from aegis.runtime.transport.proto import credentials_pb2_grpc as pb_grpc

pytestmark = pytest.mark.asyncio(loop_scope="module")
NATS_URL = "nats://10.0.0.1:4222"


class RecordingService(CredentialService):
    """The real service, remembering what arrived and failing on demand."""

    def __init__(self, job: JobAccount) -> None:
        # limits far above what these tests send; test_throttling checks them on its own
        super().__init__(NATS_URL, [job], Throttle(refused_burst=10_000))
        self.requests: list[pb.IssueRequest] = []
        self.unavailable_first = 0
        self.transient_code = grpc.StatusCode.UNAVAILABLE
        self.explode = False

    def issue(self, request: pb.IssueRequest, verdict: str | None = None) -> pb.IssueReply:
        self.requests.append(request)
        if self.explode:
            raise RuntimeError("bug in the service")
        return super().issue(request, verdict)

    async def Issue(
        self, request: pb.IssueRequest, context: grpc.aio.ServicerContext
    ) -> pb.IssueReply:
        if self.unavailable_first > 0:
            self.unavailable_first -= 1
            self.requests.append(request)
            await context.abort(self.transient_code, "warming up")
        return await super().Issue(request, context)


@pytest.fixture(scope="module")
def job() -> JobAccount:
    return Operator().create_job_account("team", "train-a")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(job: JobAccount) -> AsyncIterator[CredentialServer]:
    async with CredentialServer(RecordingService(job)) as srv:
        yield srv


@pytest.fixture
def service(server: CredentialServer) -> RecordingService:
    svc = server.service
    assert isinstance(svc, RecordingService)
    svc.requests.clear()
    svc.unavailable_first, svc.transient_code, svc.explode = 0, grpc.StatusCode.UNAVAILABLE, False
    return svc


async def ask(server: CredentialServer, token: str, **kw: object) -> object:
    args: dict[str, object] = {
        "namespace": "team",
        "job": "train-a",
        "pod_name": "train-a-w0",
        "incarnation": os.urandom(4).hex(),  # a new agent each time
    }
    args.update(kw)
    return await request_credentials(
        server.address,
        proof=token,
        attempts=3,
        timeout=2.0,
        backoff=0.01,
        **args,  # type: ignore[arg-type]
    )


async def raw_issue(server: CredentialServer, request: pb.IssueRequest) -> grpc.aio.AioRpcError:
    async with grpc.aio.insecure_channel(server.address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await pb_grpc.CredentialsStub(channel).Issue(request, timeout=2.0)
    return info.value


async def test_issue_sends_only_the_public_key(
    server: CredentialServer, service: RecordingService, job: JobAccount
) -> None:
    issued = await request_credentials(
        server.address,
        namespace="team",
        job="train-a",
        pod_name="train-a-w0",
        proof=job.bootstrap_token,
        incarnation="first",
    )
    assert issued.nats_url == NATS_URL
    assert issued.subjects == job.subjects
    [request] = service.requests
    public = issued.credentials.public_key
    assert request.user_public_nkey == public and public.startswith("U")
    wire = request.SerializeToString()
    assert issued.credentials.seed not in wire
    assert {f.name for f, _ in request.ListFields()} == {
        "job",
        "namespace",
        "pod_name",
        "user_public_nkey",
        "proof",
        "incarnation",
    }


async def test_bad_token_is_permission_denied_without_retry(
    server: CredentialServer, service: RecordingService, job: JobAccount
) -> None:
    with pytest.raises(CredentialsRejected, match="PERMISSION_DENIED") as info:
        await ask(server, job.bootstrap_token + "x")
    assert info.value.code == "PERMISSION_DENIED"
    assert len(service.requests) == 1


async def test_unknown_job_is_permission_denied(server: CredentialServer, job: JobAccount) -> None:
    with pytest.raises(CredentialsRejected, match="unknown job or bad bootstrap token"):
        await ask(server, job.bootstrap_token, job="train-z")


@pytest.mark.parametrize(
    ("key", "detail"),
    [
        ("not-a-key", "public user NKey"),
        ("", "public user NKey"),
        (new_user_keypair().seed.decode(), "looks like a private seed"),
        (Operator().system_account.public_key, "public user NKey"),
    ],
)
async def test_malformed_key_is_invalid_argument(
    server: CredentialServer, job: JobAccount, key: str, detail: str
) -> None:
    request = build_request("team", "train-a", "train-a-w0", key, job.bootstrap_token, "i")
    err = await raw_issue(server, request)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert detail in (err.details() or "")


@pytest.mark.parametrize(
    ("namespace", "pod"), [("Team", "p"), ("te.am", "p"), ("team", "Pod_0"), ("team", "")]
)
async def test_malformed_names_are_invalid_argument(
    server: CredentialServer, job: JobAccount, namespace: str, pod: str
) -> None:
    key = new_user_keypair().public_key.decode()
    err = await raw_issue(
        server, build_request(namespace, "train-a", pod, key, job.bootstrap_token, "i")
    )
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_internal_errors_are_reported_and_the_server_keeps_serving(
    server: CredentialServer, service: RecordingService, job: JobAccount
) -> None:
    service.explode = True
    with pytest.raises(CredentialsRejected, match="INTERNAL"):
        await ask(server, job.bootstrap_token)
    service.explode = False
    assert (await ask(server, job.bootstrap_token)) is not None


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED])
async def test_transient_unavailability_is_retried(
    server: CredentialServer, service: RecordingService, job: JobAccount, code: grpc.StatusCode
) -> None:
    """Also CANCELLED: what a server shedding load answers calls its handler never saw."""
    service.unavailable_first, service.transient_code = 2, code
    assert (await ask(server, job.bootstrap_token)) is not None
    assert len(service.requests) == 3


async def test_a_burst_of_agents_asking_at_once_all_get_their_credentials() -> None:
    """A job's agents all ask as it starts: grpc's server cancelled calls past 1,000 pending
    (2,000 at once: ~9% of them, never handled); one attempt each must do."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 5_000:
        pytest.skip(f"2,000 connections need more file descriptors than {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 5_000), hard))
    try:
        job = Operator().create_job_account("team", "train-x")
        service = CredentialService(NATS_URL, throttle=Throttle(rate=1e9, burst=1e9))
        service.add_job(job)
        async with CredentialServer(service) as srv:
            results = await asyncio.gather(
                *(
                    request_credentials(
                        srv.address, namespace="team", job="train-x", pod_name=f"train-x-w{i}",
                        proof=job.bootstrap_token, incarnation="i1", attempts=1,
                        timeout=120.0,
                    )
                    for i in range(2_000)
                ),
                return_exceptions=True,
            )  # fmt: skip
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    failed = [r for r in results if isinstance(r, BaseException)]
    assert failed == [], f"{len(failed)} of 2,000 failed, e.g. {failed[0]!r}"


async def test_unreachable_server_gives_up_after_the_attempts() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(CredentialsUnavailable, match="after 2 attempts"):
        await request_credentials(
            f"127.0.0.1:{port}",
            namespace="team",
            job="train-a",
            pod_name="p",
            proof="t",
            incarnation="i",
            attempts=2,
            timeout=0.3,
            backoff=0.01,
        )


def jwt_subject(jwt: str) -> str:
    body = jwt.split(".")[1]
    return str(json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))["sub"])


async def issue_raw(server: CredentialServer, request: pb.IssueRequest) -> pb.IssueReply:
    async with grpc.aio.insecure_channel(server.address) as channel:
        reply: pb.IssueReply = await pb_grpc.CredentialsStub(channel).Issue(request, timeout=2.0)
    return reply


async def test_one_credential_per_incarnation_for_one_key(
    server: CredentialServer, job: JobAccount
) -> None:
    key = new_user_keypair().public_key.decode()
    request = build_request("team", "train-a", "train-a-w1", key, job.bootstrap_token, "inc-7")
    first = await issue_raw(server, request)
    # the agent's retry (same key) gets its credential again
    again = await issue_raw(server, request)
    assert jwt_subject(first.user_jwt) == jwt_subject(again.user_jwt) == key
    # anyone else holding the token gets nothing for that incarnation
    thief = new_user_keypair().public_key.decode()
    stolen = build_request("team", "train-a", "train-a-w1", thief, job.bootstrap_token, "inc-7")
    err = await raw_issue(server, stolen)
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "already holds a credential" in (err.details() or "")
    empty = build_request("team", "train-a", "train-a-w1", thief, job.bootstrap_token, "")
    assert (await raw_issue(server, empty)).code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_only_an_expected_incarnation_of_a_pod_of_the_job_gets_one() -> None:
    job = Operator().create_job_account("team", "train-e")
    expected = {"train-e-w0": "good"}
    service = CredentialService(NATS_URL)
    service.add_job(job, expects=lambda pod, inc: expected.get(pod) == inc)
    async with CredentialServer(service) as srv:
        key = new_user_keypair().public_key.decode()
        for pod, inc in (("train-e-w0", "forged"), ("train-e-w9", "good"), ("other", "good")):
            request = build_request("team", "train-e", pod, key, job.bootstrap_token, inc)
            err = await raw_issue(srv, request)
            assert err.code() == grpc.StatusCode.PERMISSION_DENIED, pod
            assert "not one this job expects" in (err.details() or "")
        good = build_request("team", "train-e", "train-e-w0", key, job.bootstrap_token, "good")
        reply = await issue_raw(srv, good)
        assert reply.subjects.worker == job.subjects.report("train-e-w0", "good")


@pytest.mark.parametrize("field", sorted(FIELD_LIMITS))
async def test_an_oversized_field_is_refused_before_it_is_logged(
    server: CredentialServer, job: JobAccount, field: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = new_user_keypair().public_key.decode()
    inc = f"i-{field.replace('_', '-')}"  # an identity of its own: its refusal is logged
    request = build_request("team", "train-a", "train-a-w0", key, job.bootstrap_token, inc)
    setattr(request, field, "x" * 1_000_000)
    with caplog.at_level(logging.INFO, logger="aegis.runtime.transport.grpc_credentials"):
        err = await raw_issue(server, request)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"{field} is 1000000 characters long" in (err.details() or "")
    assert caplog.records and max(len(r.getMessage()) for r in caplog.records) < 2_000


async def test_throttling_per_identity_never_locks_out_a_right_proof() -> None:
    """Refusals are counted per identity a request claims, not per caller address (every
    local process is 127.0.0.1): an identity refused too often is told to slow down, while a
    request with the right proof, for that very identity, is still served."""
    job = Operator().create_job_account("team", "train-t")
    service = CredentialService(
        NATS_URL, [job], Throttle(rate=0.01, burst=6, refused_rate=0.01, refused_burst=2)
    )
    async with CredentialServer(service) as srv:
        key = new_user_keypair().public_key.decode()
        bad = build_request("team", "train-t", "train-t-w0", key, "wrong", "i")
        codes = [(await raw_issue(srv, bad)).code() for _ in range(3)]
        # guessing: refused twice, then that identity is slowed down
        assert codes == [grpc.StatusCode.PERMISSION_DENIED] * 2 + [
            grpc.StatusCode.RESOURCE_EXHAUSTED
        ]
        assert "refused too often" in ((await raw_issue(srv, bad)).details() or "")
        # the right proof for the same identity gets its credential all the same
        good = build_request("team", "train-t", "train-t-w0", key, job.bootstrap_token, "i")
        assert (await issue_raw(srv, good)).user_jwt  # the 5th request of 6
        other = build_request("team", "train-t", "train-t-w1", key, "wrong", "i")
        assert (await raw_issue(srv, other)).code() == grpc.StatusCode.PERMISSION_DENIED
        # the service's own budget (its CPU) is for everyone: the 7th exceeds its burst
        err = await raw_issue(srv, good)
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "busy" in (err.details() or "")


async def test_a_costly_check_is_not_made_for_an_identity_refused_too_often() -> None:
    """A check that asks the API (a TokenReview, a pod GET) is skipped for an identity
    refused too often from one caller: a flood of bad proofs costs no API calls."""
    job = Operator().create_job_account("team", "train-k")
    calls: list[str] = []

    def proves(pod: str, incarnation: str, proof: str) -> bool:
        calls.append(proof)
        return proof == "right"

    service = CredentialService(NATS_URL, throttle=Throttle(refused_rate=0.01, refused_burst=3))
    service.add_job(job, proves=proves, expects_blocks=True)
    async with CredentialServer(service) as srv:
        key = new_user_keypair().public_key.decode()
        bad = build_request("team", "train-k", "train-k-w0", key, "wrong", "uid-0")
        codes = [(await raw_issue(srv, bad)).code() for _ in range(10)]
        assert (
            codes
            == [grpc.StatusCode.PERMISSION_DENIED] * 3 + [grpc.StatusCode.RESOURCE_EXHAUSTED] * 7
        )
        assert len(calls) == 3  # then no more API calls for it from this caller
        assert service.refused_count == 10


async def test_a_credential_expires_and_is_renewed_by_its_key_until_revoked() -> None:
    job = Operator().create_job_account("team", "train-n")
    expected = {"train-n-w0": "inc-1"}
    service = CredentialService(NATS_URL, ttl_s=120)
    service.add_job(job, expects=lambda pod, inc: expected.get(pod) == inc)
    async with CredentialServer(service) as srv:
        issued = await request_credentials(
            srv.address, namespace="team", job="train-n", pod_name="train-n-w0",
            proof=job.bootstrap_token, incarnation="inc-1", attempts=1,
        )  # fmt: skip
        now = time.time()
        assert now + 110 < issued.expires_at <= now + 121
        assert jwt_claims(issued.credentials.user_jwt)["exp"] == issued.expires_at
        assert issued.renew_at(now) == pytest.approx(now + (issued.expires_at - now) / 2)
        renewed = await renew_credentials(srv.address, issued, attempts=1)
        assert renewed.credentials.seed == issued.credentials.seed
        assert jwt_subject(renewed.credentials.user_jwt) == issued.credentials.public_key
        # a renewal signed by another key, or long ago, or replayed later, is refused
        thief = dataclasses.replace(
            issued,
            credentials=UserCredentials(issued.credentials.user_jwt, new_user_keypair().seed),
        )
        for request, says in (
            (build_renewal(thief), "no credential of this key"),
            (build_renewal(issued, int(time.time()) - 3600), "stale renewal signature"),
        ):
            err = await raw_renew(srv, request)
            assert err.code() == grpc.StatusCode.PERMISSION_DENIED
            assert says in (err.details() or ""), err.details()
        forged = build_renewal(issued)
        forged.signature = bytes(64)
        assert (await raw_renew(srv, forged)).code() == grpc.StatusCode.PERMISSION_DENIED
        # replaced: never renewed again, and no new credential for that incarnation either
        assert service.revoke("team", "train-n", "train-n-w0", "inc-1") == (
            issued.credentials.public_key
        )
        with pytest.raises(CredentialsRejected, match="credential is revoked"):
            await renew_credentials(srv.address, issued, attempts=1)
        again = build_request(
            "team", "train-n", "train-n-w0", issued.credentials.public_key,
            job.bootstrap_token, "inc-1",
        )  # fmt: skip
        assert "revoked" in ((await raw_issue(srv, again)).details() or "")


async def raw_renew(server: CredentialServer, request: pb.RenewRequest) -> grpc.aio.AioRpcError:
    async with grpc.aio.insecure_channel(server.address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await pb_grpc.CredentialsStub(channel).Renew(request, timeout=2.0)
    return info.value


def jwt_claims(jwt: str) -> dict[str, Any]:
    body = jwt.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))))


async def test_checks_that_block_run_side_by_side_off_the_event_loop() -> None:
    """A check that asks the Kubernetes API blocks for a round trip: four at once must be
    in flight together (the barrier opens only then; on the loop they ran one by one and the
    first one held every other request up), none on the loop's thread."""
    job = Operator().create_job_account("team", "train-b")
    barrier, seen = threading.Barrier(4, timeout=10), []
    service = CredentialService(NATS_URL)

    def expects(pod: str, incarnation: str) -> bool:
        seen.append(threading.get_ident())
        barrier.wait()
        return incarnation == "good"

    service.add_job(job, expects=expects, expects_blocks=True)
    async with CredentialServer(service) as srv:
        key = new_user_keypair().public_key.decode()
        requests = [
            build_request("team", "train-b", f"train-b-w{i}", key, job.bootstrap_token, "good")
            for i in range(4)
        ]
        replies = await asyncio.gather(*(issue_raw(srv, r) for r in requests))
        assert [r.subjects.worker for r in replies] == [
            job.subjects.report(f"train-b-w{i}", "good") for i in range(4)
        ]
        assert len(seen) == 4 and threading.get_ident() not in seen
        # a request that fails an earlier check never reaches the API
        bad = build_request("team", "train-b", "train-b-w0", key, "wrong token", "good")
        assert (await raw_issue(srv, bad)).code() == grpc.StatusCode.PERMISSION_DENIED
        assert len(seen) == 4


async def test_a_job_removed_during_its_check_gets_no_credential() -> None:
    job = Operator().create_job_account("team", "train-r")
    service = CredentialService(NATS_URL)

    def expects(pod: str, incarnation: str) -> bool:
        service.remove_job("team", "train-r")  # its CR deleted meanwhile
        return True

    service.add_job(job, expects=expects, expects_blocks=True)
    async with CredentialServer(service) as srv:
        key = new_user_keypair().public_key.decode()
        request = build_request("team", "train-r", "train-r-w0", key, job.bootstrap_token, "i1")
        assert (await raw_issue(srv, request)).code() == grpc.StatusCode.PERMISSION_DENIED
