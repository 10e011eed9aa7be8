"""`StatusStore` over the Aegis CR's status subresource (the Aegis Controller's store).

`save` sends a JSON merge patch of what changed since the last load/save, with the
resourceVersion it last saw as a precondition. The controller's group commit calls it once per
batch of events (docs/persistence.md). In the CR, a spec variable that is a function over the
pods (`{"fn": [[{"mv": pod}, value], ...]}`) is kept as `{"fnOfMv": {pod: value}}`, so that the
patch of an event carries the entries it changed, not the whole function.

On 409 it re-reads the CR: if only metadata or spec moved, it retries with the new
resourceVersion (at most `attempts` times); if the *status* changed under it, another writer
is active and it raises StatusConflictError instead of overwriting (crash-only: the controller
restarts and resumes from the CR).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from typing import Any, NoReturn, Protocol

from aegis import retry
from aegis.errors import AegisError
from aegis.k8s.errors import (
    AegisCrMissingError,
    ApiError,
    StatusConflictError,
    StatusTooLargeError,
)
from aegis.k8s.resources import AEGIS, Resource
from aegis.runtime.controller.store import Status

log = logging.getLogger(__name__)

DEFAULT_ATTEMPTS = retry.CR_CONFLICT.tries or 1


class _Conflict(AegisError):
    """A patch refused with 409 while only the CR's metadata or spec moved: patch again."""


class CrApi(Protocol):
    """The two calls the store needs (KubeApi has them; tests may pass a fake)."""

    def get(self, res: Resource, namespace: str | None, name: str, sub: str = "") -> dict[str, Any]:
        """Read an object."""
        ...

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        patch: Mapping[str, Any],
        sub: str = "",
    ) -> dict[str, Any]:
        """Merge-patch an object or subresource."""
        ...


def merge_patch(old: Any, new: Any) -> Any:
    """The RFC 7386 merge patch that turns `old` into `new` (None deletes a key)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Any] = {key: None for key in old.keys() - new.keys()}
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif old[key] is not value and old[key] != value:  # the same object: unchanged
            patch[key] = merge_patch(old[key], value) if isinstance(value, dict) else value
    return patch


def status_from_cr(obj: Mapping[str, Any]) -> Status | None:
    """The Status kept in a CR object, None while the controller has not written one."""
    status = obj.get("status")
    if not isinstance(status, dict) or "version" not in status:
        return None
    return Status.from_json(json.dumps(_from_cr(status)))


def _to_cr(
    status: dict[str, Any], seen: dict[str, tuple[Any, Any]] | None = None
) -> dict[str, Any]:
    """The CR form of a status object (functions over model values keyed by name). With
    `seen` ({variable: (encoding, CR form)} of the last call, updated here), a variable whose
    encoding is the very object of last time keeps its CR form (the snapshot shares the
    encodings of unchanged variables: ControllerCore's StateEncoder)."""
    variables = _variables(status)
    if variables is None:
        return status
    keyed = {}
    for name, value in variables.items():
        last = None if seen is None else seen.get(name)
        if last is None or last[0] is not value:
            last = (value, _keyed_from(last, value))
            if seen is not None:
                seen[name] = last
        keyed[name] = last[1]
    return {**status, "specState": {**status["specState"], "variables": keyed}}


def _field(obj: Any, key: str) -> Any:
    """obj[key] if obj is a JSON object (else None)."""
    return obj.get(key) if isinstance(obj, dict) else None


def _only(obj: Any, key: str) -> Any:
    """obj[key] if obj is a JSON object with that one key (else None)."""
    return obj.get(key) if isinstance(obj, dict) and len(obj) == 1 else None


def _keyed_from(last: tuple[Any, Any] | None, value: Any) -> Any:
    """`_keyed(value)`, from the last (encoding, CR form) where the encoding is a copy of the
    last one with some entries replaced (StateEncoder): a copy of the last map with those."""
    if last is None:
        return _keyed(value)
    old_pairs, old_map = _field(last[0], "fn"), _field(last[1], "fnOfMv")
    new_pairs = _only(value, "fn")
    if not (isinstance(old_pairs, list) and isinstance(new_pairs, list)):
        return _keyed(value)
    if not isinstance(old_map, dict) or len(old_pairs) != len(new_pairs):
        return _keyed(value)
    out = _replaced(old_map, old_pairs, new_pairs)
    return _keyed(value) if out is None else {"fnOfMv": out}


def _replaced(
    old_map: dict[str, Any], old_pairs: list[Any], new_pairs: list[Any]
) -> dict[str, Any] | None:
    """A copy of `old_map` with the pairs that are new objects; None if one of them has
    another key at its place (the map is then made afresh)."""
    out = dict(old_map)
    for new, old in zip(new_pairs, old_pairs, strict=True):
        if new is old:
            continue
        name = _only(new[0], "mv")
        if name is None or new[0] != old[0]:
            return None
        out[name] = new[1]
    return out


def _from_cr(status: dict[str, Any]) -> dict[str, Any]:
    """The inverse of `_to_cr` (a status written before it is returned as it is)."""
    variables = _variables(status)
    if variables is None:
        return status
    listed = {name: _listed(value) for name, value in variables.items()}
    return {**status, "specState": {**status["specState"], "variables": listed}}


def _variables(status: Mapping[str, Any]) -> dict[str, Any] | None:
    spec = status.get("specState")
    variables = spec.get("variables") if isinstance(spec, dict) else None
    return variables if isinstance(variables, dict) else None


def _keyed(value: Any) -> Any:
    """A TLA+ function of model values ({"fn": [[{"mv": pod}, v], ...]}) as {"fnOfMv":
    {pod: v}}; any other value as it is."""
    pairs = _only(value, "fn")
    if not isinstance(pairs, list) or not pairs:
        return value
    names = [_only(k, "mv") for k, _ in pairs]
    if not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
        return value
    return {"fnOfMv": {name: v for name, (_, v) in zip(names, pairs, strict=True)}}


def _listed(value: Any) -> Any:
    keyed = _only(value, "fnOfMv")
    if not isinstance(keyed, dict):
        return value
    return {"fn": [[{"mv": name}, keyed[name]] for name in sorted(keyed)]}


class CrStatusStore:
    """Load/save one job's Status in its Aegis CR."""

    def __init__(
        self, api: CrApi, namespace: str, name: str, attempts: int = DEFAULT_ATTEMPTS
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.attempts = attempts
        self._seen: dict[str, Any] | None = None  # status object as last read or written
        self._version = ""  # resourceVersion as last read or written
        self._cr_forms: dict[str, tuple[Any, Any]] = {}  # see _to_cr

    def load(self) -> Status | None:
        """The saved status, or None if the controller has not saved one yet."""
        obj = self.read()
        return status_from_cr(obj)

    def save(self, status: Status) -> None:
        """Persist `status`; StatusConflictError if another writer changed it meanwhile."""
        new = _to_cr(status.to_obj(), self._cr_forms)  # no JSON text to parse back
        self.save_obj(new, len(status.pod_infos))

    def save_obj(self, new: dict[str, Any], pods: int) -> None:
        """Make the CR's status `new` (a merge patch of what changed; `pods`: for the message
        of a status too large)."""
        if self._seen is None:
            self.read()
        policy = dataclasses.replace(retry.CR_CONFLICT, tries=self.attempts)
        try:
            retry.call(lambda: self._patch(new, pods), policy, _Conflict, self._conflicted)
        except _Conflict:
            raise StatusConflictError(
                f"aegis {self.namespace}/{self.name}: status still conflicting after "
                f"{self.attempts} attempts; is another controller writing it?"
            ) from None

    def _patch(self, new: dict[str, Any], pods: int) -> None:
        """One merge patch from the status last seen to `new` (_Conflict: try again)."""
        body: dict[str, Any] = {"status": merge_patch(self._seen or {}, new)}
        if self._version:
            body["metadata"] = {"resourceVersion": self._version}
        try:
            obj = self.api.patch(AEGIS, self.namespace, self.name, body, sub="status")
        except ApiError as exc:
            if exc.too_large:
                raise StatusTooLargeError(
                    f"aegis {self.namespace}/{self.name}: the API server refused its "
                    f"status of {pods} pods as too large ({exc.api_message}); the job "
                    "cannot be saved, so it fails (docs/kubernetes.md, 'Job size')"
                ) from None
            self._on_patch_error(exc)
        self._remember(obj, new)

    def _conflicted(self, failures: int, exc: BaseException) -> None:
        log.info("aegis %s/%s: 409 on save, retry %d", self.namespace, self.name, failures)

    def _on_patch_error(self, exc: ApiError) -> NoReturn:
        if exc.not_found:
            raise self._missing() from None
        if not exc.conflict:
            raise exc
        before = self._seen
        obj = self.api.get(AEGIS, self.namespace, self.name)
        if _status_obj(obj) != before:
            raise StatusConflictError(
                f"aegis {self.namespace}/{self.name}: its status was changed by another "
                "writer; reload it before saving"
            ) from None
        self._version = _version(obj)
        raise _Conflict("409: only the CR's metadata or spec moved")

    def read(self) -> dict[str, Any]:
        """The CR as the API holds it now (what later saves patch from)."""
        try:
            obj = self.api.get(AEGIS, self.namespace, self.name)
        except ApiError as exc:
            if exc.not_found:
                raise self._missing() from None
            raise
        self._seen = _status_obj(obj)
        self._version = _version(obj)
        return obj

    def _remember(self, obj: Mapping[str, Any], written: dict[str, Any]) -> None:
        self._seen = written
        self._version = _version(obj)

    def _missing(self) -> AegisCrMissingError:
        return AegisCrMissingError(
            f"aegis {self.namespace}/{self.name} not found: the Job Controller creates it "
            "from the AegisJob; was the job deleted?"
        )


def _status_obj(obj: Mapping[str, Any]) -> dict[str, Any]:
    status = obj.get("status")
    return dict(status) if isinstance(status, dict) else {}


def _version(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""
