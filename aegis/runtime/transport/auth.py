"""NATS decentralized auth: an operator, a system account, one account per job, user JWTs.

Trust chain: operator → account (one per job) → users. Only the public parts (JWTs) go into
the server config; seeds stay in this process. A worker's user JWT is issued for one
incarnation of one pod: it may publish only on that incarnation's own subjects, and it
expires (docs/security.md); the operator's ctl user (`aegis ctl`) may use only
`aegis.<ns>.<job>.ctl.>` and its own inbox; the controller's user has no limits inside the
job's account (the account itself is the job's boundary). A credential whose incarnation was
replaced is revoked in the account's JWT (`Operator.revoked`), which nats-server applies at
once to the connections made with it.
"""

from __future__ import annotations

import dataclasses
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import nkeys
from nats_jwt.nkeys_ext import (
    Decode,
    create_account_pair,
    create_operator_pair,
    create_user_pair,
)
from nats_jwt.v2.account_claims import AccountClaims
from nats_jwt.v2.operator_claims import OperatorClaims

from aegis.protocol.subjects import JobSubjects, validate_incarnation, validate_pod_name
from aegis.runtime.transport.user_jwt import encode_user_jwt

_PUBLIC_KEY_LEN = 56  # base32 of prefix(1) + ed25519 key(32) + crc16(2)


def is_user_public_key(value: object) -> bool:
    """True for a well-formed public *user* NKey (`U…`, valid checksum), never for a seed."""
    if not isinstance(value, str) or len(value) != _PUBLIC_KEY_LEN or not value.startswith("U"):
        return False
    try:
        Decode(nkeys.PREFIX_BYTE_USER, value.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return False
    return True


def new_user_keypair() -> Any:
    """A fresh user NKey pair (`nkeys.KeyPair`); its seed must never leave this process."""
    return create_user_pair()


@dataclass(frozen=True)
class Permissions:
    """A user's subjects: what it may publish, subscribe to, and whether it may answer the
    requests it receives (NATS response permission: one reply each, to the sender's inbox)."""

    pub: tuple[str, ...]
    sub: tuple[str, ...]
    respond: bool = False


@dataclass(frozen=True)
class UserCredentials:
    """A user JWT and its private seed: what a NATS client needs to connect."""

    user_jwt: str
    seed: bytes = field(repr=False)

    @property
    def public_key(self) -> str:
        """The user's public NKey (the JWT's subject)."""
        return str(nkeys.from_seed(bytearray(self.seed)).public_key.decode())

    def creds_text(self) -> str:
        """The standard NATS `.creds` text (JWT + seed), for in-memory use only."""
        return (
            "-----BEGIN NATS USER JWT-----\n"
            f"{self.user_jwt}\n"
            "------END NATS USER JWT------\n\n"
            "-----BEGIN USER NKEY SEED-----\n"
            f"{self.seed.decode('ascii')}\n"
            "------END USER NKEY SEED------\n"
        )


@dataclass(frozen=True)
class Account:
    """A NATS account: its signed JWT and the key pair that signs its users."""

    name: str
    keypair: Any = field(repr=False, compare=False)
    jwt: str = field(repr=False)

    @property
    def public_key(self) -> str:
        """The account's public NKey (`A…`), the key of `resolver_preload`."""
        return str(self.keypair.public_key.decode())

    def user_jwt(
        self, public_key: str, name: str, perms: Permissions | None = None, *, expires: int = 0
    ) -> str:
        """Sign a user JWT for `public_key`, limited by `perms` (None: no limits), valid until
        `expires` (Unix seconds; 0: no expiry); the bytes nats-jwt's UserClaims would write,
        without its serializer (runtime.transport.user_jwt)."""
        if perms is None:
            return encode_user_jwt(
                self.keypair, public_key, name, None, None, respond=False, expires=expires
            )
        return encode_user_jwt(
            self.keypair,
            public_key,
            name,
            list(perms.pub),
            list(perms.sub),
            perms.respond,
            expires=expires,
        )

    def new_user(self, name: str, perms: Permissions | None = None) -> UserCredentials:
        """A fresh user key pair with a JWT from this account (for users we run ourselves)."""
        kp = new_user_keypair()
        return UserCredentials(self.user_jwt(kp.public_key.decode(), name, perms), bytes(kp.seed))


def _new_account(operator_kp: Any, name: str) -> Account:
    kp = create_account_pair()
    return Account(name=name, keypair=kp, jwt=_account_jwt(operator_kp, kp, name, {}))


def _account_jwt(operator_kp: Any, kp: Any, name: str, revocations: Mapping[str, int]) -> str:
    """An account's JWT; `revocations`: user public key -> Unix time, every JWT of that key
    issued at or before that time is refused (and its connections closed)."""
    claims = AccountClaims(kp.public_key.decode(), name)
    if revocations:
        claims.nats.revocations = dict(revocations)
    return str(claims.encode(operator_kp))


@dataclass(frozen=True)
class JobAccount:
    """One job's account, its subjects and the bootstrap token that agents present."""

    subjects: JobSubjects
    account: Account
    bootstrap_token: str = field(repr=False)

    @property
    def key(self) -> tuple[str, str]:
        """(namespace, job): how registries look a job up."""
        return (self.subjects.namespace, self.subjects.job)

    def worker_permissions(self, pod: str, incarnation: str) -> Permissions:
        """What the credential of `incarnation` of `pod` allows: publish only that
        incarnation's own joins, reports and heartbeats (the subjects name it: the controller
        reads the sender's incarnation there, never in the payload); receive orders, ctl
        requests to its pod and the replies to its own requests; answer a request it
        received (`resp`), e.g. an operator's ctl request, and nothing else."""
        s = self.subjects
        return Permissions(
            pub=(
                s.join(pod, incarnation),
                s.report(pod, incarnation),
                s.heartbeat(pod, incarnation),
            ),
            sub=(s.master, s.ctl_agent(pod), f"{s.inbox_prefix(pod)}.>"),
            respond=True,
        )

    def token_matches(self, token: str) -> bool:
        """Constant-time comparison with the job's bootstrap token."""
        return hmac.compare_digest(token.encode("utf-8"), self.bootstrap_token.encode("utf-8"))

    def worker_jwt(
        self, user_public_key: str, pod_name: str, incarnation: str, *, expires: int = 0
    ) -> str:
        """A user JWT for a worker's public key, for one incarnation of one pod, valid until
        `expires` (Unix seconds; 0: no expiry)."""
        if not is_user_public_key(user_public_key):
            raise ValueError("not a public user NKey (expected 56 characters starting with 'U')")
        validate_pod_name(pod_name)
        validate_incarnation(incarnation)
        # a worker speaks only for itself (its own incarnation's subjects) and never sends
        # a ctl request or an order: a compromised pod cannot stop the job, taint nodes,
        # report for another pod, or for another incarnation of its own
        perms = self.worker_permissions(pod_name, incarnation)
        return self.account.user_jwt(user_public_key, pod_name, perms, expires=expires)

    @property
    def ctl_permissions(self) -> Permissions:
        """What the operator's ctl user may do: send control requests, read their replies."""
        s = self.subjects
        return Permissions(pub=(s.ctl_wildcard,), sub=(f"{s.ctl_inbox_prefix}.>",))

    def ctl_credentials(self, name: str = "ctl") -> UserCredentials:
        """Credentials for `aegis ctl`: control requests only (never orders or reports)."""
        return self.account.new_user(name, self.ctl_permissions)

    def controller_credentials(self, name: str = "master") -> UserCredentials:
        """Credentials for the job's master: everything inside the job's account."""
        return self.account.new_user(name)


class Operator:
    """The trust root: signs the system account and one account per job."""

    def __init__(self, name: str = "aegis") -> None:
        self._kp = create_operator_pair()
        self.system_account = _new_account(self._kp, "SYS")
        claims = OperatorClaims(self._kp.public_key.decode(), name)
        claims.nats.system_account = self.system_account.public_key
        self.jwt: str = claims.encode(self._kp)
        self.name = name

    @property
    def public_key(self) -> str:
        """The operator's public NKey (`O…`)."""
        return str(self._kp.public_key.decode())

    def revoked(self, account: Account, revocations: Mapping[str, int]) -> Account:
        """`account` with a JWT that revokes `revocations` (user public key -> Unix time:
        that key's JWTs issued at or before it); the server applies it on reload."""
        jwt = _account_jwt(self._kp, account.keypair, account.name, revocations)
        return dataclasses.replace(account, jwt=jwt)

    def create_job_account(
        self, namespace: str, job: str, bootstrap_token: str | None = None
    ) -> JobAccount:
        """A new account for one job, with a fresh random bootstrap token unless given."""
        subjects = JobSubjects(namespace, job)
        token = bootstrap_token if bootstrap_token is not None else secrets.token_urlsafe(32)
        if not token:
            raise ValueError("bootstrap token must not be empty")
        account = _new_account(self._kp, f"{namespace}.{job}")
        return JobAccount(subjects=subjects, account=account, bootstrap_token=token)
