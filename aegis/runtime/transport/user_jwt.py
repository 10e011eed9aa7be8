"""NATS user JWTs, written without nats-jwt's dataclass serializer.

nats-jwt builds a user JWT through dataclasses-json, which took most of the credential
service's time per agent (docs/scale.md, "Decisions"). This module writes the same bytes
directly: the claims JSON in nats-jwt's key order and separators, the same `jti`
(base32 of SHA-512/256 over the claims without it), the same header, an Ed25519 signature by
the account's NKey (nkeys). tests/runtime/test_user_jwt.py checks it byte for byte against
nats-jwt on random users with the clock fixed, so a new nats-jwt that writes otherwise fails
there, not in nats-server.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from typing import Any

_HEADER = base64.urlsafe_b64encode(b'{"typ": "JWT", "alg": "ed25519-nkey"}').rstrip(b"=")


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def _jti(claims: dict[str, Any]) -> str:
    digest = hashlib.new("sha512_256", json.dumps(claims).encode()).digest()
    return base64.b32encode(digest).rstrip(b"=").decode()


def encode_user_jwt(
    keypair: Any,
    subject: str,
    name: str,
    pub: list[str] | None,
    sub: list[str] | None,
    respond: bool,
    *,
    expires: int = 0,
) -> str:
    """A user JWT for `subject` (a public user NKey) signed by the account's `keypair`:
    publish/subscribe allow-lists (None: no limit) and, with `respond`, one reply per
    request received (`{"max": 1, "ttl": 0}`); `expires` (Unix seconds, 0: never) is its
    `exp`: nats-server refuses it after that and closes a connection made with it. An empty
    allow-list is refused (ValueError): the JWT would carry none, and nats-server would read
    that as no limit at all."""
    if pub == [] or sub == []:
        raise ValueError("an empty allow-list would allow every subject; pass None for that")
    nats: dict[str, Any] = {
        "subs": -1,
        "data": -1,
        "payload": -1,
        "pub": {} if pub is None else {"allow": pub},
        "sub": {} if sub is None else {"allow": sub},
    }
    if respond:
        nats["resp"] = {"max": 1, "ttl": 0}
    nats.update({"bearer_token": None, "allowed_connection_types": None})
    nats.update({"type": "user", "version": 2})
    issuer = keypair.public_key.decode()
    head: dict[str, Any] = {"sub": subject, "name": name}
    if expires:
        head["exp"] = int(expires)  # nats-jwt's order: sub, name, exp, jti, iat, iss
    unsigned = {**head, "iat": int(time.time()), "iss": issuer, "nats": nats}
    claims = {**head, "jti": _jti(unsigned), **{k: v for k, v in unsigned.items() if k not in head}}
    to_sign = _HEADER + b"." + _b64(json.dumps(claims).encode())
    return (to_sign + b"." + _b64(keypair.sign(to_sign))).decode()
