"""NATS decentralized auth: an operator, a system account, one account per job, user JWTs.

Trust chain: operator → account (one per job) → users. Only the public parts (JWTs) go into
the server config; seeds stay in this process. A worker's user JWT allows pub/sub only on
`aegis.<ns>.<job>.>` and `_INBOX.>`; the operator's ctl user (`aegis ctl`) only
`aegis.<ns>.<job>.ctl.>` and `_INBOX.>`; the controller's user has no limits inside the job's
account (the account itself is the job's boundary).
"""

from __future__ import annotations

import hmac
import secrets
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

from aegis.protocol.subjects import JobSubjects, validate_pod_name
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

    def user_jwt(self, public_key: str, name: str, perms: Permissions | None = None) -> str:
        """Sign a user JWT for `public_key`, limited by `perms` (None: no limits); the bytes
        nats-jwt's UserClaims would write, without its serializer (runtime.transport.user_jwt)."""
        if perms is None:
            return encode_user_jwt(self.keypair, public_key, name, None, None, respond=False)
        return encode_user_jwt(
            self.keypair, public_key, name, list(perms.pub), list(perms.sub), perms.respond
        )

    def new_user(self, name: str, perms: Permissions | None = None) -> UserCredentials:
        """A fresh user key pair with a JWT from this account (for users we run ourselves)."""
        kp = new_user_keypair()
        return UserCredentials(self.user_jwt(kp.public_key.decode(), name, perms), bytes(kp.seed))


def _new_account(operator_kp: Any, name: str) -> Account:
    kp = create_account_pair()
    jwt = AccountClaims(kp.public_key.decode(), name).encode(operator_kp)
    return Account(name=name, keypair=kp, jwt=jwt)


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

    def worker_permissions(self, pod: str) -> Permissions:
        """What `pod`'s credential allows: publish only its own joins, reports and heartbeats;
        receive orders, ctl requests to itself and the replies to its own requests; answer
        a request it received (`resp`), e.g. an operator's ctl request, and nothing else."""
        s = self.subjects
        return Permissions(
            pub=(s.join(pod), s.report(pod), s.heartbeat(pod)),
            sub=(s.master, s.ctl_agent(pod), f"{s.inbox_prefix(pod)}.>"),
            respond=True,
        )

    def token_matches(self, token: str) -> bool:
        """Constant-time comparison with the job's bootstrap token."""
        return hmac.compare_digest(token.encode("utf-8"), self.bootstrap_token.encode("utf-8"))

    def worker_jwt(self, user_public_key: str, pod_name: str) -> str:
        """A user JWT for a worker's public key, limited to this job's subjects."""
        if not is_user_public_key(user_public_key):
            raise ValueError("not a public user NKey (expected 56 characters starting with 'U')")
        validate_pod_name(pod_name)
        # a worker speaks only for itself (its own report and heartbeat subjects) and never
        # sends a ctl request or an order: a compromised pod cannot stop the job, taint
        # nodes, or report for another pod
        return self.account.user_jwt(user_public_key, pod_name, self.worker_permissions(pod_name))

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
