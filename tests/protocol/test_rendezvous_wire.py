"""The node rendezvous's messages: every message survives encode/decode; malformed lines are
refused with a reason; the CA offer's MAC binds the nonce, the CA and the secret."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.protocol import rendezvous as wire
from aegis.protocol.errors import MalformedMessage

SECRET = b"s3cret-s3cret-s3cret"
hexes = st.text("0123456789abcdef", min_size=64, max_size=64)
names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=60)
variables = st.dictionaries(
    st.from_regex(r"AEGIS_[A-Z_]{1,20}", fullmatch=True), st.text(max_size=200), max_size=10
)
messages = st.one_of(
    st.builds(wire.Hello, hexes),
    st.builds(wire.CaOffer, names, hexes),
    st.builds(wire.Join, hexes, st.integers(0, 1 << 20), names, st.integers(1, 4096)),
    st.builds(wire.Refused, names),
    st.builds(
        wire.Welcome,
        st.text("abc-", min_size=1, max_size=63),
        st.text("xyz", min_size=1, max_size=63),
        names,
        st.booleans(),
        st.floats(0.1, 86400),
    ),
    st.builds(wire.Start, variables),
    st.builds(wire.Exited, names, names, st.integers(-(1 << 16), 1 << 16)),
    st.builds(wire.End, st.integers(0, 255), st.text(max_size=100)),
    st.just(wire.Ping()),
)


@given(messages)
def test_every_message_round_trips(msg: wire.NodeMessage) -> None:
    line = wire.encode(msg)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert wire.decode(line) == msg


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"not json\n", "not JSON"),
        (b"[1]\n", "not a JSON object"),
        (b'{"op": "ping"}\n', "protocol version"),
        (b'{"op": "ping", "v": 2}\n', "protocol version"),
        (b'{"op": "shout", "v": 1}\n', "unknown op"),
        (b'{"op": "hello", "v": 1, "nonce": "xyz"}\n', "64 lowercase hex"),
        (b'{"op": "join", "v": 1, "token": "' + b"a" * 64 + b'"}\n', "missing 'nodeRank'"),
        (
            b'{"op": "join", "v": 1, "token": "'
            + b"a" * 64
            + b'", "nodeRank": true, "hostname": "h", "nproc": 1}\n',
            "'nodeRank' must be an integer",
        ),
        (b'{"op": "start", "v": 1, "agent": {"PATH": "/bin"}}\n', "not an AEGIS_ string"),
        (b'{"op": "start", "v": 1, "agent": {"AEGIS_X": 3}}\n', "not an AEGIS_ string"),
        (b'{"op": "end", "v": 1, "code": 300, "why": ""}\n', "0..255"),
        (
            b'{"op": "welcome", "v": 1, "job": "j", "namespace": "n", "node": "h", '
            b'"spare": 1, "hostTimeout": 30}\n',
            "true or false",
        ),
    ],
)
def test_malformed_lines_are_refused_with_a_reason(line: bytes, reason: str) -> None:
    with pytest.raises(MalformedMessage, match=reason):
        wire.decode(line)


def test_oversized_lines_are_refused() -> None:
    with pytest.raises(MalformedMessage, match="exceeds"):
        wire.decode(b" " * (wire.MAX_LINE + 1))
    with pytest.raises(MalformedMessage, match="exceeds"):
        wire.encode(wire.Refused("x" * wire.MAX_LINE))


def test_the_ca_offer_is_bound_to_secret_nonce_and_ca() -> None:
    nonce, ca = "ab" * 32, "-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n"
    offer = wire.CaOffer(ca, wire.ca_mac(SECRET, nonce, ca))
    assert wire.ca_offer_genuine(SECRET, nonce, offer)
    assert not wire.ca_offer_genuine(b"another-secret-value", nonce, offer)
    assert not wire.ca_offer_genuine(SECRET, "cd" * 32, offer)  # a replayed offer
    assert not wire.ca_offer_genuine(SECRET, nonce, wire.CaOffer(ca + " ", offer.mac))


def test_the_join_token_is_derived_not_the_secret() -> None:
    token = wire.join_token(SECRET)
    assert len(token) == 64 and SECRET.hex() not in token and token != wire.join_token(b"x" * 20)
    assert json.loads(wire.encode(wire.Join(token, 1, "h", 1)))["token"] == token


def test_short_secrets_are_refused() -> None:
    assert "at least 16" in (wire.secret_problem("short") or "")
    assert wire.secret_problem("0123456789abcdef") is None
