"""The fast user JWT writer gives nats-jwt's bytes exactly (the clock fixed)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nats_jwt.v2.user_claims import UserClaims

from aegis.runtime.transport.auth import Operator, Permissions, new_user_keypair
from aegis.runtime.transport.user_jwt import encode_user_jwt

ACCOUNT = Operator().create_job_account("default", "train").account
USERS = [new_user_keypair().public_key.decode() for _ in range(4)]
SUBJECT = st.text("abcdefghijklmnopqrstuvwxyz0123456789-._>*", min_size=1, max_size=40)


@dataclass
class _Responses:
    """What nats-server reads as the response permission (nats-jwt writes `max_msgs`)."""

    max: int = 1
    ttl: int = 0

    def validate(self, vr: Any) -> None:
        """Nothing to check."""


def nats_jwt_reference(key: str, name: str, perms: Permissions | None, expires: int = 0) -> str:
    """The JWT as nats-jwt's UserClaims writes it (what Account.user_jwt did before)."""
    claims = UserClaims(key, name)
    claims.exp = expires
    if perms is not None:
        claims.nats.pub.allow = list(perms.pub)
        claims.nats.sub.allow = list(perms.sub)
        if perms.respond:
            claims.nats.resp = _Responses()
    return str(claims.encode(ACCOUNT.keypair))


@settings(max_examples=60, deadline=None)
@given(
    key=st.sampled_from(USERS),
    name=st.text(min_size=1, max_size=30),
    pub=st.lists(SUBJECT, min_size=1, max_size=4),
    sub=st.lists(SUBJECT, min_size=1, max_size=4),
    respond=st.booleans(),
    limited=st.booleans(),
    now=st.floats(min_value=1.6e9, max_value=4e9),
    expires=st.one_of(st.just(0), st.integers(min_value=1, max_value=2**40)),
)
def test_the_same_bytes_as_nats_jwt(
    key: str,
    name: str,
    pub: list[str],
    sub: list[str],
    respond: bool,
    limited: bool,
    now: float,
    expires: int,
) -> None:
    perms = Permissions(tuple(pub), tuple(sub), respond) if limited else None
    with mock.patch("time.time", return_value=now):
        ours = ACCOUNT.user_jwt(key, name, perms, expires=expires)
        assert ours == nats_jwt_reference(key, name, perms, expires)
        if perms is not None:  # the writer itself, not only through Account
            direct = encode_user_jwt(ACCOUNT.keypair, key, name, pub, sub, respond, expires=expires)
            assert direct == ours


def test_an_empty_allow_list_is_refused_not_read_as_no_limit() -> None:
    # nats-jwt leaves an empty list out of the JWT, and nats-server reads no list as no limit
    with pytest.raises(ValueError, match="every subject"):
        ACCOUNT.user_jwt(USERS[0], "w", Permissions(pub=(), sub=("a",)))
    with pytest.raises(ValueError, match="every subject"):
        encode_user_jwt(ACCOUNT.keypair, USERS[0], "w", ["a"], [], respond=True)


def test_each_user_gets_its_own_signed_token() -> None:
    a, b = (ACCOUNT.user_jwt(k, "w") for k in USERS[:2])
    assert a.split(".")[0] == b.split(".")[0]  # the same header
    assert a.split(".")[1] != b.split(".")[1] and a.split(".")[2] != b.split(".")[2]
    payload, sig = a.rsplit(".", 1)
    raw = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
    assert ACCOUNT.keypair.verify(payload.encode(), raw)
