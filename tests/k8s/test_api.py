"""KubeApi: dicts in and out, every failure as ApiError."""

from __future__ import annotations

import socket

import pytest

from aegis.k8s.api import KubeApi, _event
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


def test_missing_kubeconfig_is_an_api_error(tmp_path: object) -> None:
    with pytest.raises(ApiError, match="no usable Kubernetes configuration"):
        KubeApi.from_config(kubeconfig=f"{tmp_path}/missing")
