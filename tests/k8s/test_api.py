"""KubeApi: dicts in and out, every failure as ApiError."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import kmock
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.k8s import api as api_module
from aegis.k8s.api import KubeApi, _event, _lines, _loads
from aegis.k8s.errors import ApiError
from aegis.k8s.resources import AEGIS, POD, Resource

from .cluster import NAMESPACE, Cluster

POD_OBJ = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": NAMESPACE}}


def test_crud_round_trip_and_errors(cluster: Cluster) -> None:
    api = cluster.api
    created = api.create(POD, NAMESPACE, POD_OBJ)
    assert created["metadata"]["uid"]
    with pytest.raises(ApiError) as exists:
        api.create(POD, NAMESPACE, POD_OBJ)
    assert exists.value.conflict
    api.patch(POD, NAMESPACE, "p", {"metadata": {"labels": {"a": "b"}}})
    assert api.get(POD, NAMESPACE, "p")["metadata"]["labels"] == {"a": "b"}
    assert [p["metadata"]["name"] for p in api.list(POD, NAMESPACE)] == ["p"]
    api.delete(POD, NAMESPACE, "p")
    with pytest.raises(ApiError) as gone:
        api.get(POD, NAMESPACE, "p")
    assert gone.value.not_found and "404" in str(gone.value)
    with pytest.raises(ApiError, match="not declared"):
        api.list(Resource("x.dev", "v1", "things", "Thing"), NAMESPACE)
    assert api.list(AEGIS, NAMESPACE) == []


@pytest.mark.parametrize("expired", [False, True])
def test_a_list_is_read_in_pages(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch, expired: bool
) -> None:
    """Seven pods in pages of three: three answers; when the list's version has expired at
    the second page (410), one more list in one piece, and no pod twice or missing."""
    monkeypatch.setattr(api_module, "LIST_PAGE", 3)
    names = [f"p{i}" for i in range(7)]
    for name in names:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE},
        }
        cluster.api.create(POD, NAMESPACE, pod)
    cluster.emulator.expire_continue = expired
    before = _lists(cluster)
    assert sorted(p["metadata"]["name"] for p in cluster.api.list(POD, NAMESPACE)) == names
    made = _lists(cluster)[len(before) :]
    if expired:  # the first page, the refused second, the whole list
        assert [r.get("limit") for r in made] == ["3", "3", None]
    else:
        assert [r.get("continue") for r in made] == [None, "team/p2", "team/p5"]


def test_a_server_that_would_page_forever_is_an_api_error(monkeypatch: pytest.MonkeyPatch) -> None:
    api = KubeApi.for_url("http://127.0.0.1:1")
    same = {"items": [{"metadata": {"name": "p"}}], "metadata": {"continue": "again"}}
    monkeypatch.setattr(api, "_json", lambda *args, **kwargs: same)
    with pytest.raises(ApiError, match="the same continue token twice"):
        api.list(POD, NAMESPACE)


def _lists(cluster: Cluster) -> list[dict[str, str]]:
    """The query of each pod list the emulator has answered so far."""
    return [
        dict(r.params)
        for r in cluster.emulator  # kmock iterates the requests it has served
        if r.action == kmock.action.LIST and r.resource is not None and r.resource.plural == "pods"
    ]


def test_unreachable_server_is_an_api_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    api = KubeApi.for_url(f"http://127.0.0.1:{port}", timeout_s=2)
    api._client.configuration.retries = 0
    with pytest.raises(ApiError) as err:
        api.get(POD, NAMESPACE, "p")
    assert err.value.status == 0 and f"127.0.0.1:{port}" in str(err.value)


def test_watch_events_are_parsed_and_errors_raised() -> None:
    assert _event(b'{"type": "ADDED", "object": {"a": 1}}') == ("ADDED", {"a": 1})
    with pytest.raises(ApiError) as gone:
        _event(b'{"type": "ERROR", "object": {"code": 410, "reason": "Gone", "message": "old"}}')
    assert gone.value.status == 410
    with pytest.raises(ApiError, match="not a JSON event"):
        _event(b"garbage")
    # an object that is not one (it raised AttributeError in the watch's thread, or went on
    # to the cache): a clear ApiError, after which the watchers list or watch again
    for line in (b'{"type": "ADDED", "object": [1]}', b'{"type": "ERROR", "object": "x"}'):
        with pytest.raises(ApiError, match="an event's object is not one"):
            _event(line)


def test_missing_kubeconfig_is_an_api_error(tmp_path: object) -> None:
    with pytest.raises(ApiError, match="no usable Kubernetes configuration"):
        KubeApi.from_config(kubeconfig=f"{tmp_path}/missing")


class _Stream:
    """A response whose body arrives in the given pieces."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    def stream(self, amt: int, decode_content: bool) -> Iterator[bytes]:
        yield from self.pieces


@settings(max_examples=200)
@given(
    st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    st.lists(st.integers(1, 40), min_size=1, max_size=10),
    st.booleans(),
)
def test_a_watch_streams_lines_whatever_pieces_they_come_in(
    lines: list[bytes], cuts: list[int], last_newline: bool
) -> None:
    body = b"\n".join(lines) + (b"\n" if last_newline else b"")
    pieces, at, i = [], 0, 0
    while at < len(body):
        pieces.append(body[at : at + cuts[i % len(cuts)]])
        at += cuts[i % len(cuts)]
        i += 1
    got = list(_lines(_Stream(pieces)))  # type: ignore[arg-type]
    assert got == [line for line in lines if line.strip()]


def test_answers_orjson_refuses_are_read_as_the_standard_library_reads_them() -> None:
    assert _loads(b'{"a": [1, 2.5, "\\u00e9"]}') == {"a": [1, 2.5, "é"]}
    assert _loads(b'{"n": NaN}')["n"] != _loads(b'{"n": NaN}')["n"]  # NaN: json.loads takes it
    # Go writes integers of at most 64 bits (int64, or float64 past it): exact here
    assert _loads(b'{"i": -9223372036854775808, "u": 18446744073709551615}') == {
        "i": -(2**63),
        "u": 2**64 - 1,
    }
    with pytest.raises(ValueError):
        _loads(b"garbage")
