"""A dict-in, dict-out Kubernetes client: the only module here that talks HTTP.

It uses the official `kubernetes` package for what is hard to get right (kubeconfig, exec
plugins, in-cluster service-account tokens, TLS) and sends plain JSON itself, so every caller
works with the same dicts the API server speaks; no generated model classes, no pydantic.
Every failure comes out as `ApiError`; client and urllib3 exceptions do not leak.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import urllib3
from kubernetes import client, config

from aegis.k8s.errors import ApiError
from aegis.k8s.resources import Resource

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
_CHUNK = 64 * 1024
Query = list[tuple[str, str]]  # module-level: `KubeApi.list` shadows the builtin inside
Items = list[dict[str, Any]]
# connections kept to the API server: the Aegis Controller calls it from each job's runner and
# from the credential service's checks (up to 32 at once) without opening one per call
POOL_SIZE = 64
LIST_PAGE = 500  # objects per page of a list (kubectl's --chunk-size, client-go's pager)


class KubeApi:
    """get/list/create/patch/delete/watch on any resource, objects as dicts."""

    def __init__(self, api_client: client.ApiClient, timeout_s: float = 30.0) -> None:
        self._client = api_client
        self.timeout_s = timeout_s
        self._watches: set[urllib3.BaseHTTPResponse] = set()
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, kubeconfig: str | None = None, context: str | None = None) -> KubeApi:
        """In-cluster config inside a pod (unless a kubeconfig is named), else the kubeconfig."""
        cfg = client.Configuration()
        try:
            if kubeconfig is None and context is None and "KUBERNETES_SERVICE_HOST" in os.environ:
                config.load_incluster_config(client_configuration=cfg)
            else:
                config.load_kube_config(
                    config_file=kubeconfig, context=context, client_configuration=cfg
                )
        except (config.ConfigException, OSError) as exc:
            raise ApiError(0, "", f"no usable Kubernetes configuration: {exc}") from None
        cfg.connection_pool_maxsize = POOL_SIZE
        return cls(client.ApiClient(cfg))

    @classmethod
    def for_url(cls, url: str, timeout_s: float = 10.0) -> KubeApi:
        """An unauthenticated client for a plain-HTTP server (tests, `kubectl proxy`)."""
        cfg = client.Configuration()
        cfg.host = url.rstrip("/")
        cfg.connection_pool_maxsize = POOL_SIZE
        return cls(client.ApiClient(cfg), timeout_s)

    @property
    def host(self) -> str:
        """The API server URL."""
        return str(self._client.configuration.host)

    def close(self) -> None:
        """End open watches and release the connection pool."""
        self.close_watches()
        self._client.close()

    def close_watches(self) -> None:
        """End every open watch now (from any thread); their iterators stop."""
        with self._lock:
            open_watches, self._watches = list(self._watches), set()
        for resp in open_watches:
            # the watch may be closing by itself at this very moment (EBADF): it ends either way
            with contextlib.suppress(OSError):
                getattr(resp, "shutdown", resp.close)()

    def get(self, res: Resource, namespace: str | None, name: str, sub: str = "") -> dict[str, Any]:
        """One object (or its subresource)."""
        return self._json("GET", res.path(namespace, name, sub))

    def list(
        self, res: Resource, namespace: str | None = None, label_selector: str = ""
    ) -> list[dict[str, Any]]:
        """The items of a collection (all namespaces when namespace is None), read in pages of
        LIST_PAGE objects as kubectl and client-go's pager read them: a 12,500-pod job's pods
        in 25 answers, not one of tens of MB. The pages are one consistent list (the API
        server serves them from the first page's version); when that version has expired
        (410 at a later page), the list is read again in one piece, as client-go does."""
        return self.list_versioned(res, namespace, label_selector)[0]

    def list_versioned(
        self, res: Resource, namespace: str | None = None, label_selector: str = ""
    ) -> tuple[Items, str]:
        """`list`, and the list's resourceVersion: a watch from it misses no change."""
        path = res.path(namespace)
        query = [("labelSelector", label_selector)] if label_selector else []
        items: list[Any] = []
        token, version = "", ""
        while True:
            try:
                page = self._page(path, query, token)
            except ApiError as exc:
                if not token or exc.status != 410:
                    raise
                return self._list_whole(path, query)  # the list's version has expired
            items += page.get("items") or []
            version = version or _version(page)  # the first page's: the list's version
            token = _continue_token(page, token, path)
            if not token:
                return _objects(items), version

    def _page(self, path: str, query: Query, token: str) -> dict[str, Any]:
        """One page of LIST_PAGE objects of a list, after `token` ("": the first)."""
        paging = [("limit", str(LIST_PAGE)), *([("continue", token)] if token else [])]
        return self._json("GET", path, query=[*query, *paging])

    def _list_whole(self, path: str, query: Query) -> tuple[Items, str]:
        """A list read in one piece, and its resourceVersion."""
        page = self._json("GET", path, query=query)
        return _objects(page.get("items") or []), _version(page)

    def create(
        self, res: Resource, namespace: str | None, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Create an object; ApiError(409) if it exists."""
        return self._json("POST", res.path(namespace), body=dict(body), content_type=JSON)

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        patch: Mapping[str, Any],
        sub: str = "",
    ) -> dict[str, Any]:
        """JSON merge patch (RFC 7386) of an object or its subresource."""
        path = res.path(namespace, name, sub)
        return self._json("PATCH", path, body=dict(patch), content_type=MERGE_PATCH)

    def delete(self, res: Resource, namespace: str | None, name: str) -> None:
        """Delete an object; ApiError(404) if it is gone already."""
        self._json("DELETE", res.path(namespace, name))

    def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        label_selector: str = "",
        timeout_s: int = 300,
        resource_version: str = "",
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(type, object) events until the server ends the watch or `timeout_s` passes: the
        changes after `resource_version` (a list's), else every object as ADDED first. A
        version too old to watch from is ApiError(410): list again."""
        query = [("watch", "true"), ("timeoutSeconds", str(timeout_s))]
        if label_selector:
            query.append(("labelSelector", label_selector))
        if resource_version:
            query.append(("resourceVersion", resource_version))
        resp = self._request("GET", res.path(namespace), query, None, None, timeout_s + 15.0)
        if resp.status >= 400:
            raise _error(resp.status, self._read(resp, "GET", res.path(namespace)))
        with self._lock:
            self._watches.add(resp)
        try:
            for line in _lines(resp):
                yield _event(line)
        except (urllib3.exceptions.HTTPError, OSError):
            return  # read timeout, closed by the server or by close_watches: watch again
        finally:
            with self._lock:
                self._watches.discard(resp)
            resp.release_conn()

    def _json(
        self,
        method: str,
        path: str,
        query: Query | None = None,
        body: dict[str, Any] | None = None,
        content_type: str | None = None,
    ) -> dict[str, Any]:
        resp = self._request(method, path, query or [], body, content_type, self.timeout_s)
        data = self._read(resp, method, path)
        if resp.status >= 400:
            raise _error(resp.status, data)
        try:
            obj = _loads(data) if data else {}
        except ValueError:
            raise ApiError(resp.status, "BadResponse", f"{method} {path}: not JSON") from None
        return obj if isinstance(obj, dict) else {}

    def _request(
        self,
        method: str,
        path: str,
        query: Query,
        body: dict[str, Any] | None,
        content_type: str | None,
        timeout_s: float,
    ) -> urllib3.BaseHTTPResponse:
        headers = {"Accept": JSON}
        if content_type:
            headers["Content-Type"] = content_type
        try:
            _, url, headers, payload, _ = self._client.param_serialize(
                method, path, query_params=query, header_params=headers, body=body,
                auth_settings=["BearerToken"],
            )  # fmt: skip
            resp = self._client.call_api(
                method, url, header_params=headers, body=payload,
                _request_timeout=(min(10.0, timeout_s), timeout_s),
            )  # fmt: skip
        except (urllib3.exceptions.HTTPError, OSError, client.ApiException) as exc:
            raise ApiError(0, "", f"{method} {self.host}{path}: {exc}") from None
        return resp.response

    def _read(self, resp: urllib3.BaseHTTPResponse, method: str, path: str) -> bytes:
        try:
            return bytes(resp.data)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ApiError(0, "", f"{method} {self.host}{path}: {exc}") from None
        finally:
            resp.release_conn()


def _loads(data: bytes) -> Any:
    """The JSON value of an API server's answer: by orjson (the controllers decode a large
    job's Aegis CR at every status patch they watch), by the standard library where orjson
    refuses (its answer then). Go writes no integer past 64 bits, which orjson would read as
    a float."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def _objects(items: list[Any]) -> Items:
    """The JSON objects among a list's items."""
    return [i for i in items if isinstance(i, dict)]


def _continue_token(page: Mapping[str, Any], last: str, path: str) -> str:
    """The token of a list's next page ("": this was the last page)."""
    meta = page.get("metadata")
    token = str(meta.get("continue") or "") if isinstance(meta, dict) else ""
    if token and token == last:  # a server that would page forever
        raise ApiError(0, "BadResponse", f"GET {path}: the same continue token twice")
    return token


def _version(page: Mapping[str, Any]) -> str:
    meta = page.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""


def _event(line: bytes) -> tuple[str, dict[str, Any]]:
    """A watch line's (type, object); ApiError for an ERROR event, and for anything but a JSON
    object whose object is one (a watch thread that met a list there would die, and the cache
    it kept would go stale without a word)."""
    try:
        event = _loads(line)
        kind, obj = str(event.get("type", "")), event.get("object") or {}
    except (ValueError, AttributeError):
        raise ApiError(0, "BadResponse", f"watch: not a JSON event: {line[:200]!r}") from None
    if not isinstance(obj, dict):
        raise ApiError(0, "BadResponse", f"watch: an event's object is not one: {line[:200]!r}")
    if kind == "ERROR":
        raise ApiError(int(obj.get("code", 0)), str(obj.get("reason", "")), str(obj.get("message")))
    return kind, obj


def _error(status: int, data: bytes) -> ApiError:
    try:
        obj = _loads(data)
    except ValueError:
        obj = {}
    if not isinstance(obj, dict):
        obj = {}
    message = str(obj.get("message") or data[:200].decode("utf-8", "replace"))
    return ApiError(status, str(obj.get("reason") or ""), message)


def _lines(resp: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    """The stream's non-blank lines. A line's pieces are joined once, when its end comes (not
    added to the line so far and the whole split again at each chunk: quadratic in an event's
    size)."""
    pieces: list[bytes] = []
    for chunk in resp.stream(_CHUNK, decode_content=True):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            pieces.append(chunk[start:end])
            line = b"".join(pieces)
            pieces.clear()
            if line.strip():
                yield line
            start = end + 1
        if start < len(chunk):
            pieces.append(chunk[start:])
    line = b"".join(pieces)
    if line.strip():
        yield line
