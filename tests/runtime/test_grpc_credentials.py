"""The gRPC credential handout on real loopback gRPC: refusals, retries, no seed on the wire."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import grpc
import pytest
import pytest_asyncio

from aegis.runtime.errors import CredentialsRejected, CredentialsUnavailable
from aegis.runtime.transport.auth import JobAccount, Operator, new_user_keypair
from aegis.runtime.transport.grpc_credentials import (
    CredentialServer,
    CredentialService,
    build_request,
    request_credentials,
)
from aegis.runtime.transport.proto import credentials_pb2 as pb
from aegis.runtime.transport.proto import credentials_pb2_grpc as pb_grpc

pytestmark = pytest.mark.asyncio(loop_scope="module")
NATS_URL = "nats://10.0.0.1:4222"


class RecordingService(CredentialService):
    """The real service, remembering what arrived and failing on demand."""

    def __init__(self, job: JobAccount) -> None:
        super().__init__(NATS_URL, [job])
        self.requests: list[pb.IssueRequest] = []
        self.unavailable_first = 0
        self.explode = False

    def issue(self, request: pb.IssueRequest) -> pb.IssueReply:
        self.requests.append(request)
        if self.explode:
            raise RuntimeError("bug in the service")
        return super().issue(request)

    async def Issue(
        self, request: pb.IssueRequest, context: grpc.aio.ServicerContext
    ) -> pb.IssueReply:
        if self.unavailable_first > 0:
            self.unavailable_first -= 1
            self.requests.append(request)
            await context.abort(grpc.StatusCode.UNAVAILABLE, "warming up")
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
    svc.unavailable_first, svc.explode = 0, False
    return svc


async def ask(server: CredentialServer, token: str, **kw: object) -> object:
    args: dict[str, object] = {"namespace": "team", "job": "train-a", "pod_name": "train-a-w0"}
    args.update(kw)
    return await request_credentials(
        server.address,
        bootstrap_token=token,
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
        bootstrap_token=job.bootstrap_token,
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
        "bootstrap_token",
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
    request = build_request("team", "train-a", "train-a-w0", key, job.bootstrap_token)
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
        server, build_request(namespace, "train-a", pod, key, job.bootstrap_token)
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


async def test_transient_unavailability_is_retried(
    server: CredentialServer, service: RecordingService, job: JobAccount
) -> None:
    service.unavailable_first = 2
    assert (await ask(server, job.bootstrap_token)) is not None
    assert len(service.requests) == 3


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
            bootstrap_token="t",
            attempts=2,
            timeout=0.3,
            backoff=0.01,
        )
