"""gRPC credential handout: the master's server and the agent's client (docs/design.md,
"Communication").

The agent makes its own user NKey pair and sends only the public key with the job's bootstrap
token; the master answers with a user JWT signed by the job's account key, limited to the
job's subjects. The seed never leaves the agent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import grpc

from aegis import retry
from aegis.protocol.errors import InvalidNameError
from aegis.protocol.subjects import JobSubjects, validate_label, validate_pod_name
from aegis.retry import RetryPolicy
from aegis.runtime.errors import CredentialsRejected, CredentialsUnavailable, TransportError
from aegis.runtime.transport.auth import (
    JobAccount,
    UserCredentials,
    is_user_public_key,
    new_user_keypair,
)
from aegis.runtime.transport.proto import credentials_pb2 as pb
from aegis.runtime.transport.proto import credentials_pb2_grpc as pb_grpc
from aegis.runtime.transport.tls import ServerIdentity

log = logging.getLogger(__name__)

_RETRYABLE = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
        # a server shedding load cancels calls its handler never saw (grpc's pending limits)
        grpc.StatusCode.CANCELLED,
    }
)
# grpc's server cancels calls waiting to be handled past 1,000 pending (its default
# max_pending_requests), or waiting longer than 30 s, and a job's agents all ask when the job
# starts. The per-caller throttle and the service's own pace bound the queue; each call's own
# deadline bounds its wait.
SERVER_OPTIONS = (
    ("grpc.server.max_pending_requests", 100_000),
    ("grpc.server.max_pending_requests_hard_limit", 100_000),
    ("grpc.server_max_unrequested_time_in_server", 600),
)
_DENIED = "unknown job or bad bootstrap token"


class _Refusal(Exception):
    def __init__(self, code: grpc.StatusCode, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def _looks_like_seed(key: str) -> bool:
    return key.startswith("S") and len(key) == 58


# the longest value each request field may have (checked before anything is logged)
FIELD_LIMITS = {
    "namespace": 63,
    "job": 63,
    "pod_name": 253,
    "user_public_nkey": 64,
    "bootstrap_token": 256,
    "incarnation": 128,
}
# (pod, incarnation) -> whether the job expects this incarnation of this pod now
Expects = Callable[[str, str], bool]
# checks that ask another service (the Kubernetes API) at once, each in a thread of the
# service's own: a check that blocks for an API round trip holds up no other request (on the
# event loop, 12,500 pods' checks ran one after the other)
CHECK_THREADS = 32


class TokenBucket:
    """`rate` events per second, bursts of `burst`; `take()` is False when empty."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens, self.stamp = burst, time.monotonic()

    def take(self) -> bool:
        """Spend one token if there is one."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


@dataclass(frozen=True)
class Throttle:
    """Per-caller limits: all requests, and (much lower) refused ones (token guessing)."""

    rate: float = 500.0
    burst: float = 5000.0
    refused_rate: float = 2.0
    refused_burst: float = 20.0


class _JobEntry:
    """A job the service issues for: its account, which incarnations it expects, and the
    key each incarnation was issued for (one credential per incarnation)."""

    def __init__(self, account: JobAccount, expects: Expects | None, blocks: bool) -> None:
        self.account = account
        self.expects = expects
        self.blocks = blocks  # expects does blocking I/O: it runs off the event loop
        self.issued: dict[tuple[str, str], str] = {}  # (pod, incarnation) -> public key


class CredentialService(pb_grpc.CredentialsServicer):
    """Issues worker JWTs for the jobs it knows; refuses everything else, never crashes.

    A credential is bound to one pod incarnation: the job's `expects(pod, incarnation)`
    must accept it (the local launcher registers each incarnation it starts; on Kubernetes
    the pod's uid is checked against the API), and once an incarnation got a credential only
    the same public key gets it again (the agent's retry), never another key."""

    def __init__(
        self, nats_url: str, jobs: Iterable[JobAccount] = (), throttle: Throttle | None = None
    ) -> None:
        self.nats_url = nats_url
        self.throttle = throttle or Throttle()
        self._jobs = {j.key: _JobEntry(j, None, False) for j in jobs}
        self._callers: dict[str, tuple[TokenBucket, TokenBucket]] = {}
        self._checks: ThreadPoolExecutor | None = None  # made for the first blocking check

    def add_job(
        self, job: JobAccount, expects: Expects | None = None, *, expects_blocks: bool = False
    ) -> None:
        """Start issuing credentials for `job`, for the incarnations `expects` accepts (None:
        any pod name; still one credential per incarnation). `expects_blocks`: it does
        blocking I/O (asks the Kubernetes API), so the RPC runs it in a thread, up to
        CHECK_THREADS at once, and only for a request that passed every other check."""
        self._jobs[job.key] = _JobEntry(job, expects, expects_blocks)

    def close(self) -> None:
        """End the threads of blocking checks (the server has stopped)."""
        if self._checks is not None:
            self._checks.shutdown(wait=False, cancel_futures=True)
            self._checks = None

    def remove_job(self, namespace: str, job: str) -> None:
        """Stop issuing credentials for a job."""
        self._jobs.pop((namespace, job), None)

    def admit(self, caller: str) -> bool:
        """Whether `caller` (its address, without the port) may make one more request."""
        return self._buckets(caller)[0].take()

    def refused(self, caller: str) -> bool:
        """Count a refusal of `caller`; False once it has been refused too often."""
        return self._buckets(caller)[1].take()

    def _buckets(self, caller: str) -> tuple[TokenBucket, TokenBucket]:
        if caller not in self._callers:
            if len(self._callers) > 10_000:  # forget the oldest callers
                self._callers.pop(next(iter(self._callers)))
            th = self.throttle
            self._callers[caller] = (
                TokenBucket(th.rate, th.burst),
                TokenBucket(th.refused_rate, th.refused_burst),
            )
        return self._callers[caller]

    def issue(self, request: pb.IssueRequest, expected: bool | None = None) -> pb.IssueReply:
        """Check the request and sign a worker JWT; raises _Refusal with the status code.
        `expected`: the job's `expects` answer, asked already (off the event loop)."""
        entry, key = self._admissible(request)
        self._bind(entry, request.pod_name, request.incarnation, key, expected)
        subjects = entry.account.subjects
        return pb.IssueReply(
            user_jwt=entry.account.worker_jwt(key, request.pod_name),
            nats_url=self.nats_url,
            subjects=pb.Subjects(master=subjects.master, worker=subjects.report(request.pod_name)),
        )

    def _admissible(self, request: pb.IssueRequest) -> tuple[_JobEntry, str]:
        """The job's entry and the public key of a request that passes every check but the
        job's `expects` and the incarnation's binding; raises _Refusal otherwise."""
        for name, limit in FIELD_LIMITS.items():
            size = len(getattr(request, name))
            if size > limit:
                detail = f"{name} is {size} characters long; the limit is {limit}"
                raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT, detail)
        try:
            validate_label("namespace", request.namespace)
            validate_label("job", request.job)
        except InvalidNameError as exc:
            raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        entry = self._jobs.get((request.namespace, request.job))
        if entry is None or not entry.account.token_matches(request.bootstrap_token):
            raise _Refusal(grpc.StatusCode.PERMISSION_DENIED, _DENIED)
        try:
            validate_pod_name(request.pod_name)
        except InvalidNameError as exc:
            raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        key = request.user_public_nkey
        if not is_user_public_key(key):
            detail = "user_public_nkey must be a public user NKey (56 characters, 'U…')"
            if _looks_like_seed(key):
                detail += "; this looks like a private seed: never send it, rotate it"
            raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT, detail)
        if not request.incarnation:
            raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT, "incarnation must not be empty")
        return entry, key

    def _bind(
        self, entry: _JobEntry, pod: str, incarnation: str, key: str, expected: bool | None
    ) -> None:
        """One credential per pod incarnation the job expects, for one public key."""
        if expected is None and entry.expects is not None:
            expected = entry.expects(pod, incarnation)
        if expected is False:
            raise _Refusal(
                grpc.StatusCode.PERMISSION_DENIED,
                f"pod {pod} incarnation {incarnation} is not one this job expects",
            )
        bound = entry.issued.setdefault((pod, incarnation), key)
        if bound != key:
            raise _Refusal(
                grpc.StatusCode.PERMISSION_DENIED,
                f"incarnation {incarnation} of {pod} already holds a credential",
            )

    async def _expected_off_loop(self, request: pb.IssueRequest) -> bool | None:
        """The job's `expects` answer, asked in a thread when it blocks (None otherwise: it
        is asked on the loop), for a request that passed every other check (no API call for
        a bad token or a malformed name). `issue` checks the request again after it: the job
        may have been removed meanwhile."""
        job = self._jobs.get((request.namespace, request.job))
        if job is None or job.expects is None or not job.blocks:
            return None  # nothing to ask off the loop (local mode: no second validation)
        try:
            self._admissible(request)
        except _Refusal:
            return None  # `issue` refuses it, saying why
        if self._checks is None:
            self._checks = ThreadPoolExecutor(CHECK_THREADS, thread_name_prefix="aegis-creds")
        return await asyncio.get_running_loop().run_in_executor(
            self._checks, job.expects, request.pod_name, request.incarnation
        )

    async def Issue(self, request: pb.IssueRequest, context: Any) -> pb.IssueReply:
        """The RPC: `issue`, throttled per caller, refusals and errors mapped to codes."""
        caller = _caller(context)
        where = f"{request.namespace[:63]!r}/{request.job[:63]!r} pod {request.pod_name[:253]!r}"
        try:
            if not self.admit(caller):
                raise _Refusal(
                    grpc.StatusCode.RESOURCE_EXHAUSTED, f"too many requests from {caller}"
                )
            reply = self.issue(request, await self._expected_off_loop(request))
        except _Refusal as refusal:
            code, detail = refusal.code, refusal.detail
            if code != grpc.StatusCode.RESOURCE_EXHAUSTED and not self.refused(caller):
                code = grpc.StatusCode.RESOURCE_EXHAUSTED
                detail = f"{caller} was refused too often; slow down"
            log.warning("credentials refused for %s from %s: %s", where, caller, detail)
        except Exception:
            log.exception("credentials: internal error for %s", where)
            code, detail = grpc.StatusCode.INTERNAL, "internal error issuing credentials"
        else:
            log.info("credentials issued for %s", where)
            return reply
        await context.abort(code, detail)
        raise AssertionError("context.abort() returned")  # it always raises


def tls_server_credentials(identity: ServerIdentity) -> Any:
    """gRPC server credentials presenting `identity` (a job across hosts: transport/tls.py)."""
    return grpc.ssl_server_credentials([(identity.key_pem, identity.cert_pem)])


def tls_channel_credentials(ca_pem: bytes) -> Any:
    """gRPC channel credentials that trust the job's CA `ca_pem` alone."""
    return grpc.ssl_channel_credentials(root_certificates=ca_pem)


class CredentialServer:
    """A grpc.aio server hosting a CredentialService; async context manager."""

    def __init__(
        self,
        service: CredentialService,
        host: str = "127.0.0.1",
        port: int = 0,
        server_credentials: Any = None,
    ) -> None:
        self.service = service
        self._host = host
        self._port = port
        self._creds = server_credentials
        self._server: Any = None
        self.port: int | None = None

    @property
    def address(self) -> str:
        """`host:port` a client dials."""
        if self.port is None:
            raise TransportError("credential server is not running: call start() first")
        return f"{self._host}:{self.port}"

    async def start(self) -> None:
        """Bind (port 0: any free port) and start serving."""
        server = grpc.aio.server(options=SERVER_OPTIONS)
        pb_grpc.add_CredentialsServicer_to_server(self.service, server)
        where = f"{self._host}:{self._port}"
        if self._creds is None:
            port = server.add_insecure_port(where)
        else:
            port = server.add_secure_port(where, self._creds)
        if not port:
            raise TransportError(f"credential server cannot bind {where}")
        await server.start()
        self._server, self.port = server, port

    async def stop(self, grace: float = 1.0) -> None:
        """Stop serving; in-flight calls get `grace` seconds."""
        if self._server is not None:
            await self._server.stop(grace)
        self._server, self.port = None, None
        self.service.close()

    async def __aenter__(self) -> CredentialServer:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()


@dataclass(frozen=True)
class IssuedCredentials:
    """What an agent got: its NATS credentials, where to connect, and its job's subjects."""

    credentials: UserCredentials
    nats_url: str
    subjects: JobSubjects


def _caller(context: Any) -> str:
    """The caller's address without its port (`ipv4:127.0.0.1:5123` -> `ipv4:127.0.0.1`)."""
    peer = str(context.peer() or "unknown") if context is not None else "unknown"
    return peer.rsplit(":", 1)[0] if peer.count(":") >= 2 else peer


def build_request(
    namespace: str,
    job: str,
    pod_name: str,
    public_key: str,
    bootstrap_token: str,
    incarnation: str,
) -> pb.IssueRequest:
    """The request an agent sends: names, token, incarnation and the *public* key only."""
    return pb.IssueRequest(
        namespace=namespace,
        job=job,
        pod_name=pod_name,
        user_public_nkey=public_key,
        bootstrap_token=bootstrap_token,
        incarnation=incarnation,
    )


async def request_credentials(
    target: str,
    *,
    namespace: str,
    job: str,
    pod_name: str,
    bootstrap_token: str,
    incarnation: str,
    policy: RetryPolicy = retry.CREDENTIALS,
    attempts: int | None = None,
    timeout: float = 5.0,
    backoff: float | None = None,
    channel_credentials: Any = None,
    ca_pem: bytes | None = None,
) -> IssuedCredentials:
    """Ask the master at `target` for NATS credentials, retrying transient failures by
    `policy` (`attempts` and `backoff`, the first pause, override its tries and first pause);
    over TLS trusting `ca_pem` alone when it is given (or `channel_credentials`).

    Raises CredentialsRejected at once for a refusal (bad token, malformed request) and
    CredentialsUnavailable when `attempts` calls of `timeout` seconds each all failed.
    """
    policy = dataclasses.replace(
        policy,
        tries=policy.tries if attempts is None else max(1, attempts),
        first_s=policy.first_s if backoff is None else backoff,
    )
    subjects = JobSubjects(namespace, job)
    validate_pod_name(pod_name)
    kp = new_user_keypair()
    request = build_request(
        namespace, job, pod_name, kp.public_key.decode(), bootstrap_token, incarnation
    )
    if ca_pem is not None and channel_credentials is None:
        channel_credentials = tls_channel_credentials(ca_pem)
    reply = await _call_with_retries(target, request, policy, timeout, channel_credentials)
    expected = (subjects.master, subjects.report(pod_name))
    if (reply.subjects.master, reply.subjects.worker) != expected:
        raise TransportError(f"credential server sent subjects {reply.subjects} for {subjects}")
    creds = UserCredentials(user_jwt=reply.user_jwt, seed=bytes(kp.seed))
    return IssuedCredentials(credentials=creds, nats_url=reply.nats_url, subjects=subjects)


class _Unavailable(Exception):
    """A call that failed in a way worth trying again (the server not reachable yet)."""


async def _call_with_retries(
    target: str,
    request: pb.IssueRequest,
    policy: RetryPolicy,
    timeout: float,
    channel_credentials: Any,
) -> pb.IssueReply:
    if channel_credentials is None:
        channel = grpc.aio.insecure_channel(target)
    else:
        channel = grpc.aio.secure_channel(target, channel_credentials)
    async with channel:
        stub = pb_grpc.CredentialsStub(channel)

        async def issue() -> pb.IssueReply:
            try:
                reply: pb.IssueReply = await stub.Issue(
                    request, timeout=timeout, wait_for_ready=True
                )
            except grpc.aio.AioRpcError as err:
                last = f"{err.code().name}: {err.details()}"
                if err.code() not in _RETRYABLE:
                    raise CredentialsRejected(
                        f"credential server {target} refused: {last}", code=err.code().name
                    ) from None
                raise _Unavailable(last) from None
            return reply

        def failed(attempt: int, exc: BaseException) -> None:
            log.info("credentials from %s: attempt %d failed (%s)", target, attempt, exc)

        try:
            return await retry.call_async(issue, policy, _Unavailable, failed)
        except _Unavailable as exc:
            raise CredentialsUnavailable(
                f"no credentials from {target} after {policy.tries} attempts: {exc}"
            ) from None
