"""NATS keys for a cluster install: one operator, the system account, one shared AEGIS account.

The in-cluster nats-server runs with a static `resolver: MEMORY` preload, so accounts cannot be
added per job at run time as the embedded local-mode server does. All jobs share the AEGIS
account; each worker's user JWT is still limited to `aegis.<ns>.<job>.>` and `_INBOX.>`
(see docs/kubernetes.md for what that does and does not isolate). `aegis k8s keys` prints:
- ConfigMap `aegis-nats-auth`: `auth.conf` (public JWTs only), included by nats.conf;
- Secret `aegis-nats-account`: the AEGIS account's JWT and seed, mounted into the controller.
The operator seed is discarded: rotating means running `aegis k8s keys` again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any

import nkeys
from nats_jwt.nkeys_ext import create_account_pair, create_operator_pair
from nats_jwt.v2.account_claims import AccountClaims
from nats_jwt.v2.operator_claims import OperatorClaims

from aegis.protocol.subjects import JobSubjects
from aegis.runtime.transport.auth import Account, JobAccount

DEFAULT_NAMESPACE = "aegis-system"
AUTH_CONFIGMAP = "aegis-nats-auth"
ACCOUNT_SECRET = "aegis-nats-account"
AUTH_FILE = "auth.conf"
ACCOUNT_JWT_KEY = "account.jwt"
ACCOUNT_SEED_KEY = "account.seed"
SHARED_ACCOUNT = "AEGIS"


@dataclass(frozen=True)
class ClusterKeys:
    """The public JWTs the server preloads, and the shared account's seed."""

    operator_jwt: str
    system_account: str
    system_jwt: str
    account: str
    account_jwt: str
    account_seed: bytes = field(repr=False)


def _account(operator_kp: Any, name: str) -> tuple[str, str, bytes]:
    kp = create_account_pair()
    public = kp.public_key.decode()
    return public, AccountClaims(public, name).encode(operator_kp), bytes(kp.seed)


def generate_keys(operator_name: str = "aegis") -> ClusterKeys:
    """Fresh operator, system account and shared account (the operator seed is dropped)."""
    op = create_operator_pair()
    sys_pub, sys_jwt, _ = _account(op, "SYS")
    acc_pub, acc_jwt, acc_seed = _account(op, SHARED_ACCOUNT)
    claims = OperatorClaims(op.public_key.decode(), operator_name)
    claims.nats.system_account = sys_pub
    return ClusterKeys(claims.encode(op), sys_pub, sys_jwt, acc_pub, acc_jwt, acc_seed)


def auth_conf(keys: ClusterKeys) -> str:
    """The nats-server auth block: operator JWT, MEMORY resolver, both accounts preloaded."""
    return "\n".join(
        [
            f"operator: {json.dumps(keys.operator_jwt)}",
            f"system_account: {json.dumps(keys.system_account)}",
            "resolver: MEMORY",
            "resolver_preload: {",
            f"  {keys.system_account}: {json.dumps(keys.system_jwt)}",
            f"  {keys.account}: {json.dumps(keys.account_jwt)}",
            "}",
            "",
        ]
    )


def key_manifests(keys: ClusterKeys, namespace: str = DEFAULT_NAMESPACE) -> list[dict[str, Any]]:
    """The ConfigMap (public) and the Secret (seed) that `aegis k8s keys` prints."""
    labels = {"app.kubernetes.io/part-of": "aegis"}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": AUTH_CONFIGMAP, "namespace": namespace, "labels": labels},
            "data": {AUTH_FILE: auth_conf(keys)},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": ACCOUNT_SECRET, "namespace": namespace, "labels": labels},
            "type": "Opaque",
            "stringData": {
                ACCOUNT_JWT_KEY: keys.account_jwt,
                ACCOUNT_SEED_KEY: keys.account_seed.decode("ascii"),
            },
        },
    ]


def load_account(jwt: str, seed: bytes) -> Account:
    """The shared account as mounted from the Secret, ready to sign worker JWTs."""
    kp = nkeys.from_seed(bytearray(seed.strip()))
    return Account(name=SHARED_ACCOUNT, keypair=kp, jwt=jwt.strip())


def token_sha256(token: str) -> str:
    """Hex SHA-256 of a bootstrap token: what the Aegis CR carries instead of the token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class HashedJobAccount(JobAccount):
    """A JobAccount that knows only its token's SHA-256 (from the Aegis CR spec)."""

    def token_matches(self, token: str) -> bool:
        """Constant-time comparison of the token's digest with the CR's."""
        return hmac.compare_digest(token_sha256(token), self.bootstrap_token)


def job_account(account: Account, namespace: str, job: str, token_hash: str) -> JobAccount:
    """A job's view of the shared account, checking tokens against `bootstrapTokenSHA256`."""
    subjects = JobSubjects(namespace, job)
    return HashedJobAccount(subjects=subjects, account=account, bootstrap_token=token_hash)
