"""The agent's side of the credential handout: ask for a credential, renew it.

The seed of the user NKey is made here and never sent: a request carries the public key and
the proof of the incarnation (docs/security.md); a renewal is signed by the key itself
(aegis.runtime.transport.renewal).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import Any

import grpc

from aegis import retry
from aegis.protocol.subjects import JobSubjects, validate_pod_name
from aegis.retry import RetryPolicy
from aegis.runtime.errors import CredentialsRejected, CredentialsUnavailable, TransportError
from aegis.runtime.transport import renewal
from aegis.runtime.transport.auth import UserCredentials, new_user_keypair
from aegis.runtime.transport.proto import credentials_pb2 as pb
from aegis.runtime.transport.proto import credentials_pb2_grpc as pb_grpc

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


@dataclass(frozen=True)
class IssuedCredentials:
    """What an agent got: its NATS credentials (for `incarnation` of `pod`), where to connect,
    its job's subjects, and when the JWT expires (Unix seconds; 0: never)."""

    credentials: UserCredentials
    nats_url: str
    subjects: JobSubjects
    pod: str = ""
    incarnation: str = ""
    expires_at: int = 0

    def renew_at(self, now: float | None = None) -> float:
        """When (Unix seconds) to renew: half way to the expiry (inf: it never expires)."""
        if not self.expires_at:
            return float("inf")
        now = time.time() if now is None else now
        return now + max(0.0, (self.expires_at - now) / 2)


def build_request(
    namespace: str,
    job: str,
    pod_name: str,
    public_key: str,
    proof: str,
    incarnation: str,
) -> pb.IssueRequest:
    """The request an agent sends: names, proof, incarnation and the *public* key only."""
    return pb.IssueRequest(
        namespace=namespace,
        job=job,
        pod_name=pod_name,
        user_public_nkey=public_key,
        proof=proof,
        incarnation=incarnation,
    )


def build_renewal(issued: IssuedCredentials, signed_at: int | None = None) -> pb.RenewRequest:
    """A renewal of `issued`, signed now (or at `signed_at`) by its key."""
    s = issued.subjects
    key = issued.credentials.public_key
    at = int(time.time()) if signed_at is None else signed_at
    text = renewal.renewal_text(s.namespace, s.job, issued.pod, issued.incarnation, key, at)
    return pb.RenewRequest(
        namespace=s.namespace,
        job=s.job,
        pod_name=issued.pod,
        incarnation=issued.incarnation,
        user_public_nkey=key,
        signed_at=at,
        signature=renewal.sign(issued.credentials.seed, text),
    )


def tls_channel_credentials(ca_pem: bytes) -> Any:
    """gRPC channel credentials that trust the job's CA `ca_pem` alone."""
    return grpc.ssl_channel_credentials(root_certificates=ca_pem)


async def request_credentials(
    target: str,
    *,
    namespace: str,
    job: str,
    pod_name: str,
    proof: str,
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

    Raises CredentialsRejected at once for a refusal (bad proof, unknown job, malformed
    request) and CredentialsUnavailable when `attempts` calls of `timeout` seconds each all
    failed.
    """
    subjects = JobSubjects(namespace, job)
    validate_pod_name(pod_name)
    kp = new_user_keypair()
    request = build_request(namespace, job, pod_name, kp.public_key.decode(), proof, incarnation)
    if ca_pem is not None and channel_credentials is None:
        channel_credentials = tls_channel_credentials(ca_pem)
    policy = _policy(policy, attempts, backoff)
    reply = await _call_with_retries(target, "Issue", request, policy, timeout, channel_credentials)
    creds = UserCredentials(user_jwt=reply.user_jwt, seed=bytes(kp.seed))
    return _issued(reply, creds, subjects, pod_name, incarnation)


async def renew_credentials(
    target: str,
    issued: IssuedCredentials,
    *,
    policy: RetryPolicy = retry.CREDENTIALS,
    attempts: int | None = None,
    timeout: float = 5.0,
    backoff: float | None = None,
    channel_credentials: Any = None,
    ca_pem: bytes | None = None,
) -> IssuedCredentials:
    """A fresh JWT for the key of `issued` (a later expiry), asked with a request signed by
    that key (over TLS trusting `ca_pem` when given); CredentialsRejected once the
    incarnation was replaced."""
    if ca_pem is not None and channel_credentials is None:
        channel_credentials = tls_channel_credentials(ca_pem)
    reply = await _call_with_retries(
        target,
        "Renew",
        lambda: build_renewal(issued),  # signed again for each try: its time stays fresh
        _policy(policy, attempts, backoff),
        timeout,
        channel_credentials,
    )
    creds = UserCredentials(user_jwt=reply.user_jwt, seed=issued.credentials.seed)
    return _issued(reply, creds, issued.subjects, issued.pod, issued.incarnation)


def _issued(
    reply: pb.IssueReply, creds: UserCredentials, subjects: JobSubjects, pod: str, inc: str
) -> IssuedCredentials:
    expected = (subjects.master, subjects.report(pod, inc))
    if (reply.subjects.master, reply.subjects.worker) != expected:
        raise TransportError(f"credential server sent subjects {reply.subjects} for {subjects}")
    return IssuedCredentials(creds, reply.nats_url, subjects, pod, inc, int(reply.expires_at))


def _policy(policy: RetryPolicy, attempts: int | None, backoff: float | None) -> RetryPolicy:
    """`policy` with its tries and first pause overridden where given."""
    return dataclasses.replace(
        policy,
        tries=policy.tries if attempts is None else max(1, attempts),
        first_s=policy.first_s if backoff is None else backoff,
    )


class _Unavailable(Exception):
    """A call that failed in a way worth trying again (the server not reachable yet)."""


async def _call_with_retries(
    target: str,
    method: str,
    request: Any,
    policy: RetryPolicy,
    timeout: float,
    channel_credentials: Any,
) -> pb.IssueReply:
    """Call `method` ("Issue" or "Renew") with `request` (or what a callable of it makes,
    each try), retrying transient failures by `policy`."""
    if channel_credentials is None:
        channel = grpc.aio.insecure_channel(target)
    else:
        channel = grpc.aio.secure_channel(target, channel_credentials)
    async with channel:
        call = getattr(pb_grpc.CredentialsStub(channel), method)

        async def once() -> pb.IssueReply:
            message = request() if callable(request) else request
            try:
                reply: pb.IssueReply = await call(message, timeout=timeout, wait_for_ready=True)
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
            return await retry.call_async(once, policy, _Unavailable, failed)
        except _Unavailable as exc:
            raise CredentialsUnavailable(
                f"no credentials from {target} after {policy.tries} attempts: {exc}"
            ) from None
