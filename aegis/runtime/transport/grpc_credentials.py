"""gRPC credential handout: the master's server and the agent's client (docs/design.md,
"Communication"; docs/security.md).

The agent makes its own user NKey pair and sends only the public key with the proof of its
incarnation: the one-time secret its launcher handed it on an inherited socket (local mode),
the pod's projected service-account token (Kubernetes), or the job's shared bootstrap token
(a job added without its own `proves`). The master answers with a user JWT signed by the
job's account key for that incarnation only (its subjects name it), that expires after
`ttl_s`; the agent renews it before then with a request signed by its key
(aegis.runtime.transport.renewal), which is refused once its incarnation is replaced. The
seed never leaves the agent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any

import grpc

from aegis.protocol.environment import DEFAULT_CREDENTIAL_TTL_S
from aegis.protocol.errors import InvalidNameError
from aegis.protocol.subjects import (
    validate_incarnation,
    validate_label,
    validate_pod_name,
)
from aegis.runtime.errors import TransportError
from aegis.runtime.log_limit import LimitedLog
from aegis.runtime.transport import renewal
from aegis.runtime.transport.auth import JobAccount, is_user_public_key
from aegis.runtime.transport.credential_client import (
    IssuedCredentials,
    build_renewal,
    build_request,
    renew_credentials,
    request_credentials,
    tls_channel_credentials,
)
from aegis.runtime.transport.proto import credentials_pb2 as pb
from aegis.runtime.transport.proto import credentials_pb2_grpc as pb_grpc
from aegis.runtime.transport.throttle import RefusalCounts, Throttle, TokenBucket
from aegis.runtime.transport.tls import ServerIdentity

# re-exported: what agents, benches and tests import from here
__all__ = [
    "IssuedCredentials",
    "Throttle",
    "TokenBucket",
    "build_renewal",
    "build_request",
    "renew_credentials",
    "request_credentials",
    "tls_channel_credentials",
]

log = logging.getLogger(__name__)
refusals_log = LimitedLog(log)  # one line per identity a minute, however many refusals

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
# a worker JWT's lifetime (its agent renews it at half of it): a credential kept by someone
# after its incarnation was replaced, and not revoked (Kubernetes), dies within it
DEFAULT_TTL_S = DEFAULT_CREDENTIAL_TTL_S


class _Refusal(Exception):
    def __init__(self, code: grpc.StatusCode, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def _looks_like_seed(key: str) -> bool:
    return key.startswith("S") and len(key) == 58


# the longest value each request field may have (checked before anything is logged); a
# projected service-account token is a JWT of ~1 KB
FIELD_LIMITS = {
    "namespace": 63,
    "job": 63,
    "pod_name": 253,
    "user_public_nkey": 64,
    "proof": 8192,
    "incarnation": 63,
}
# (pod, incarnation) -> whether the job expects this incarnation of this pod now
Expects = Callable[[str, str], bool]
# (pod, incarnation, proof) -> whether `proof` proves that incarnation of that pod
Proves = Callable[[str, str, str], bool]
# checks that ask another service (the Kubernetes API) at once, each in a thread of the
# service's own: a check that blocks for an API round trip holds up no other request (on the
# event loop, 12,500 pods' checks ran one after the other)
CHECK_THREADS = 32
Identity = tuple[str, str, str, str]  # (namespace, job, pod, incarnation) a request claims


class _JobEntry:
    """A job the service issues for: its account, how an incarnation proves itself, which
    incarnations it expects, and the key each incarnation was issued for (one credential per
    incarnation), and the incarnations revoked (replaced: never renewed, never issued)."""

    def __init__(
        self, account: JobAccount, expects: Expects | None, proves: Proves | None, blocks: bool
    ) -> None:
        self.account = account
        self.expects = expects
        self.proves = proves
        self.blocks = blocks  # its checks do blocking I/O: they run off the event loop
        self.issued: dict[tuple[str, str], str] = {}  # (pod, incarnation) -> public key
        self.revoked: set[tuple[str, str]] = set()

    def verdict(self, pod: str, incarnation: str, proof: str | None) -> str | None:
        """Why this incarnation may not have a credential now (None: it may): `proof`, unless
        None (a renewal: proven by its signature), must prove it, and the job must expect it."""
        if proof is not None:
            proven = (
                self.account.token_matches(proof)
                if self.proves is None
                else self.proves(pod, incarnation, proof)
            )
            if not proven:
                return _DENIED if self.proves is None else f"no proof of {pod} {incarnation}"
        if (pod, incarnation) in self.revoked:
            return f"incarnation {incarnation} of {pod} was replaced: its credential is revoked"
        if self.expects is not None and not self.expects(pod, incarnation):
            return f"pod {pod} incarnation {incarnation} is not one this job expects"
        return None


class CredentialService(pb_grpc.CredentialsServicer):
    """Issues and renews worker JWTs for the jobs it knows; refuses everything else, never
    crashes.

    A credential is bound to one pod incarnation: the job's `proves` (or its bootstrap
    token) and `expects(pod, incarnation)` must accept it (the local launcher hands each
    incarnation it starts a secret of its own; on Kubernetes the pod's service-account token
    and uid are checked with the API), and once an incarnation got a credential only the
    same public key gets it again (the agent's retry), never another key. `revoke` ends an
    incarnation: no renewal, no credential again."""

    def __init__(
        self,
        nats_url: str,
        jobs: Iterable[JobAccount] = (),
        throttle: Throttle | None = None,
        *,
        ttl_s: float = DEFAULT_TTL_S,
    ) -> None:
        self.nats_url = nats_url
        self.throttle = throttle or Throttle()
        self.ttl_s = ttl_s  # <= 0: the JWTs do not expire
        self._jobs = {j.key: _JobEntry(j, None, None, False) for j in jobs}
        self._admission = TokenBucket(self.throttle.rate, self.throttle.burst)
        self._refusals = RefusalCounts(self.throttle)
        self._checks: ThreadPoolExecutor | None = None  # made for the first blocking check
        self.refused_count = 0  # requests refused, in all (tests and benches read it)

    def add_job(
        self,
        job: JobAccount,
        expects: Expects | None = None,
        *,
        expects_blocks: bool = False,
        proves: Proves | None = None,
    ) -> None:
        """Start issuing credentials for `job`, for the incarnations `expects` accepts (None:
        any pod name; still one credential per incarnation), proven by `proves` (None: the
        job's bootstrap token). `expects_blocks`: the checks do blocking I/O (ask the
        Kubernetes API), so the RPC runs them in a thread, up to CHECK_THREADS at once, and
        only for a request that passed every other check."""
        self._jobs[job.key] = _JobEntry(job, expects, proves, expects_blocks)

    def close(self) -> None:
        """End the threads of blocking checks (the server has stopped)."""
        if self._checks is not None:
            self._checks.shutdown(wait=False, cancel_futures=True)
            self._checks = None

    def remove_job(self, namespace: str, job: str) -> None:
        """Stop issuing credentials for a job."""
        self._jobs.pop((namespace, job), None)

    def revoke(self, namespace: str, job: str, pod: str, incarnation: str) -> str | None:
        """End `incarnation` of `pod` (it was replaced): never renewed or issued again. The
        public key it was issued for (None if none was), for the server's revocation."""
        entry = self._jobs.get((namespace, job))
        if entry is None:
            return None
        entry.revoked.add((pod, incarnation))
        return entry.issued.get((pod, incarnation))

    def issue(self, request: pb.IssueRequest, verdict: str | None = None) -> pb.IssueReply:
        """Check the request and sign a worker JWT; raises _Refusal with the status code.
        `verdict`: the job's checks' answer, asked already (off the event loop); None: they
        are asked here."""
        entry, key = self._admissible(request)
        pod, incarnation = request.pod_name, request.incarnation
        if verdict is None:
            verdict = entry.verdict(pod, incarnation, request.proof)
        if verdict:
            raise _Refusal(grpc.StatusCode.PERMISSION_DENIED, verdict)
        bound = entry.issued.setdefault((pod, incarnation), key)
        if bound != key:
            raise _Refusal(
                grpc.StatusCode.PERMISSION_DENIED,
                f"incarnation {incarnation} of {pod} already holds a credential",
            )
        return self._reply(entry, key, pod, incarnation)

    def renew(self, request: pb.RenewRequest, verdict: str | None = None) -> pb.IssueReply:
        """Check a renewal (the key bound to the incarnation signed it, lately) and sign a
        fresh JWT for it; raises _Refusal."""
        entry, key = self._admissible(request)
        pod, incarnation = request.pod_name, request.incarnation
        if entry.issued.get((pod, incarnation)) != key:
            raise _Refusal(
                grpc.StatusCode.PERMISSION_DENIED,
                f"incarnation {incarnation} of {pod} holds no credential of this key",
            )
        skew = abs(time.time() - request.signed_at)
        text = renewal.renewal_text(
            request.namespace, request.job, pod, incarnation, key, request.signed_at
        )
        if skew > renewal.RENEW_SKEW_S or not renewal.verify(key, text, request.signature):
            raise _Refusal(grpc.StatusCode.PERMISSION_DENIED, "bad or stale renewal signature")
        if verdict is None:
            verdict = entry.verdict(pod, incarnation, None)
        if verdict:
            raise _Refusal(grpc.StatusCode.PERMISSION_DENIED, verdict)
        return self._reply(entry, key, pod, incarnation)

    def _reply(self, entry: _JobEntry, key: str, pod: str, incarnation: str) -> pb.IssueReply:
        expires = int(time.time() + self.ttl_s) if self.ttl_s > 0 else 0
        subjects = entry.account.subjects
        return pb.IssueReply(
            user_jwt=entry.account.worker_jwt(key, pod, incarnation, expires=expires),
            nats_url=self.nats_url,
            subjects=pb.Subjects(master=subjects.master, worker=subjects.report(pod, incarnation)),
            expires_at=expires,
        )

    def _admissible(self, request: pb.IssueRequest | pb.RenewRequest) -> tuple[_JobEntry, str]:
        """The job's entry and the public key of a well-formed request for a known job;
        raises _Refusal otherwise (nothing else is checked)."""
        for name, limit in FIELD_LIMITS.items():
            size = len(getattr(request, name, ""))
            if size > limit:
                detail = f"{name} is {size} characters long; the limit is {limit}"
                raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT, detail)
        try:
            validate_label("namespace", request.namespace)
            validate_label("job", request.job)
        except InvalidNameError as exc:
            raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        entry = self._jobs.get((request.namespace, request.job))
        if entry is None:
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
        try:
            validate_incarnation(request.incarnation)
        except InvalidNameError as exc:
            raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        return entry, key

    async def _verdict_off_loop(
        self, request: pb.IssueRequest | pb.RenewRequest, caller: str
    ) -> str | None:
        """The job's checks' verdict, asked in a thread when they block (None otherwise: they
        are asked on the loop, by `issue`/`renew`), for a request that passed every other
        check (no API call for a malformed name). `issue`/`renew` check the request again
        after it: the job may have been removed meanwhile. An identity refused too often
        from this caller is not checked again for a while (RESOURCE_EXHAUSTED)."""
        job = self._jobs.get((request.namespace, request.job))
        if job is None or not job.blocks:
            return None  # nothing to ask off the loop (local mode: checks cost nothing)
        try:
            self._admissible(request)
        except _Refusal:
            return None  # `issue` refuses it, saying why
        if self._refusals.exhausted((_identity(request), caller)):
            raise _Refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, _too_often(request, caller))
        proof = request.proof if isinstance(request, pb.IssueRequest) else None
        if self._checks is None:
            self._checks = ThreadPoolExecutor(CHECK_THREADS, thread_name_prefix="aegis-creds")
        verdict = await asyncio.get_running_loop().run_in_executor(
            self._checks, job.verdict, request.pod_name, request.incarnation, proof
        )
        return verdict or ""  # "": checked, nothing against it

    async def Issue(self, request: pb.IssueRequest, context: Any) -> pb.IssueReply:
        """The RPC: `issue`, throttled, refusals and errors mapped to codes."""
        return await self._answer(
            request, context, lambda v: self.issue(request, v), "credentials issued"
        )

    async def Renew(self, request: pb.RenewRequest, context: Any) -> pb.IssueReply:
        """The RPC: `renew`, throttled like `Issue`."""
        return await self._answer(
            request, context, lambda v: self.renew(request, v), "credentials renewed"
        )

    async def _answer(
        self,
        request: pb.IssueRequest | pb.RenewRequest,
        context: Any,
        decide: Callable[[str | None], pb.IssueReply],
        what: str,
    ) -> pb.IssueReply:
        caller = _caller(context)
        identity = _identity(request)
        where = f"{identity[0]!r}/{identity[1]!r} pod {identity[2]!r} {identity[3]!r}"
        try:
            if not self._admission.take():
                raise _Refusal(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    "the credential service is busy (too many requests); retry later",
                )
            reply = decide(await self._verdict_off_loop(request, caller))
        except _Refusal as refusal:
            code, detail = refusal.code, refusal.detail
            self.refused_count += 1
            if code != grpc.StatusCode.RESOURCE_EXHAUSTED and not self._refusals.refused(
                (identity, caller)
            ):
                code, detail = grpc.StatusCode.RESOURCE_EXHAUSTED, _too_often(request, caller)
            refusals_log.warning(
                (identity, caller), "credentials refused for %s from %s: %s", where, caller, detail
            )
        except Exception:
            log.exception("credentials: internal error for %s", where)
            code, detail = grpc.StatusCode.INTERNAL, "internal error issuing credentials"
        else:
            log.info("%s for %s", what, where)
            return reply
        await context.abort(code, detail)
        raise AssertionError("context.abort() returned")  # it always raises


def _identity(request: pb.IssueRequest | pb.RenewRequest) -> Identity:
    """The identity a request claims (each field cut to its limit: a key of bounded size)."""
    return (
        request.namespace[: FIELD_LIMITS["namespace"]],
        request.job[: FIELD_LIMITS["job"]],
        request.pod_name[: FIELD_LIMITS["pod_name"]],
        request.incarnation[: FIELD_LIMITS["incarnation"]],
    )


def _too_often(request: pb.IssueRequest | pb.RenewRequest, caller: str) -> str:
    pod, incarnation = request.pod_name[:253], request.incarnation[:63]
    return f"pod {pod!r} incarnation {incarnation!r} was refused too often from {caller}; slow down"


def tls_server_credentials(identity: ServerIdentity) -> Any:
    """gRPC server credentials presenting `identity` (a job across hosts: transport/tls.py)."""
    return grpc.ssl_server_credentials([(identity.key_pem, identity.cert_pem)])


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


def _caller(context: Any) -> str:
    """The caller's address without its port (`ipv4:127.0.0.1:5123` -> `ipv4:127.0.0.1`)."""
    peer = str(context.peer() or "unknown") if context is not None else "unknown"
    return peer.rsplit(":", 1)[0] if peer.count(":") >= 2 else peer
