"""The status of a job too large for its Aegis CR: snapshots in ConfigMaps, a summary in the CR.

`ChunkedStatusStore` is the `StatusStore` of such a job (the Aegis Controller decides which:
`AegisSpec.in_configmaps`, those whose whole status could outgrow the API's object limit),
beside its ConfigMap WAL (aegis.k8s.cm_wal). A save is a snapshot: the whole status
(Status.encode), compressed and split over ConfigMaps `<cr>-snap-<uid8>-<g>-<k>` of a new
generation g (aegis.k8s.blobs), then one merge patch of the CR's status that names generation
g: that patch is the commit point. A controller that dies before it leaves the CR naming the
previous generation, whose parts are all still there (they are deleted only after the patch,
in the background); the parts of a generation no patch named are deleted when the next
controller loads the CR, before it saves. The CR's status holds what users and the Job
Controller read (`summary`): phase, shouldQuit, recoverCount, masterSeq, errorNodes, the most
retries of any pod, the pods' count by inner phase, and the entries of up to SHOWN_PODS pods
with retries or a failure reason; not the history, the spec state or the per-pod maps (those
are in the snapshot; `aegis ctl status` shows them from the controller).
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Mapping
from typing import Any

from aegis.k8s.api import KubeApi
from aegis.k8s.blobs import (
    PART_BYTES,
    is_part_of,
    join,
    name_of,
    owner_reference,
    parsed_part,
    part_object,
    selector,
    split,
    uid_tag,
)
from aegis.k8s.cm_wal import BlobApi, Deleter, delete_quietly
from aegis.k8s.cr_store import CrStatusStore, status_from_cr
from aegis.k8s.errors import ApiError
from aegis.k8s.resources import CONFIG_MAP
from aegis.runtime.errors import CorruptStatusError
from aegis.runtime.store import SCHEMA_VERSION, Status

BLOB = "snapshot"
SHOWN_PODS = 50  # pods whose entries the summary shows (the most retries first)
SHOWN_REASON = 200  # characters of an error node's reason in the summary


def snapshot_name(cr: str, tag: str, generation: int, part: int) -> str:
    """The ConfigMap holding part `part` of snapshot generation `generation` (`tag`:
    `blobs.uid_tag`)."""
    return f"{cr}-snap-{tag}-{generation}-{part}"


def summary(status: Status, pointer: Mapping[str, int]) -> dict[str, Any]:
    """What the CR's status shows of `status`, whose snapshot `pointer` names."""
    infos = status.pod_infos
    notable = [p for p, i in infos.items() if i.retries or i.last_failed_reason]
    notable.sort(key=lambda p: (-infos[p].retries, p))
    return {
        "version": SCHEMA_VERSION,
        "phase": status.phase,
        "recoverCount": status.recover_count,
        "shouldQuit": status.should_quit,
        "masterSeq": status.master_seq,
        "errorNodes": [
            {"node": e.node, "reason": e.reason[:SHOWN_REASON], "time": e.time}
            for e in status.error_nodes
        ],
        "maxRetries": max((i.retries for i in infos.values()), default=0),
        "pods": {
            "total": len(infos),
            "byPhase": dict(Counter(i.inner_phase for i in infos.values())),
        },
        "podInfos": {p: infos[p].json_obj for p in notable[:SHOWN_PODS]},
        "snapshot": dict(pointer),
    }


class ChunkedStatusStore:
    """Load/save one job's Status as ConfigMap snapshots named by its CR (see the module)."""

    def __init__(
        self, api: BlobApi, cr: CrStatusStore, deleter: Deleter, part_bytes: int = PART_BYTES
    ) -> None:
        self.api = api
        self.part_bytes = part_bytes
        self.cr = cr
        self.deleter = deleter
        self.generation = 0  # the generation the CR names
        self._owner: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        """The Aegis CR's name."""
        return self.cr.name

    @property
    def namespace(self) -> str:
        """Its namespace."""
        return self.cr.namespace

    def load(self) -> Status | None:
        """The status the CR's snapshot pointer names (None before the first save)."""
        obj = self.cr.read()
        self._owner = owner_reference(obj)
        status = obj.get("status")
        pointer = status.get("snapshot") if isinstance(status, dict) else None
        if pointer is None:  # a fresh job (or one saved whole in its CR)
            self._delete_others(0)
            return status_from_cr(obj)
        loaded = self.read_snapshot(pointer)
        self.generation = int(pointer["generation"])
        self._delete_others(self.generation)
        return loaded

    def read_snapshot(self, pointer: Any) -> Status:
        """The status in the snapshot `pointer` (the CR's status.snapshot) names, read only
        (`aegis timeline` reads a job's this way); CorruptStatusError says what is wrong."""
        generation, parts, crc = self._parse(pointer)
        try:
            data = join([self._part(generation, k, parts) for k in range(parts)])
        except zlib.error:
            data = b""
        if not data or zlib.crc32(data) != crc:
            raise CorruptStatusError(self._bad(f"snapshot {generation} fails its checksum"))
        return Status.from_json(data.decode("utf-8"))

    @classmethod
    def reader(cls, api: KubeApi, cr: Mapping[str, Any]) -> ChunkedStatusStore:
        """A store for reading the snapshots of the CR object `cr` (it deletes nothing)."""
        meta = cr.get("metadata") or {}
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        store = cls(api, CrStatusStore(api, namespace, name), Deleter(api, namespace))
        store._owner = owner_reference(cr)
        return store

    def save(self, status: Status) -> None:
        """Write the status as generation + 1, make the CR name it, then delete the last."""
        if self._owner is None:
            self.load()
        generation = self.generation + 1
        data = status.encode()
        chunks = split(data, self.part_bytes)
        owner = self._owner or {}
        for k, chunk in enumerate(chunks):
            name = snapshot_name(self.name, uid_tag(owner), generation, k)
            obj = part_object(name, self.name, BLOB, generation, (k, len(chunks)), chunk, owner)
            try:
                self.api.create(CONFIG_MAP, self.namespace, obj)
            except ApiError as exc:  # a generation no CR named: left by a controller that died
                if not exc.conflict:
                    raise
                delete_quietly(self.api, self.namespace, name)
                self.api.create(CONFIG_MAP, self.namespace, obj)
        pointer = {"generation": generation, "parts": len(chunks), "crc": zlib.crc32(data)}
        self.cr.save_obj(summary(status, pointer), len(status.pod_infos))  # the commit point
        self.generation = generation
        self.deleter.delete_matching(self.name, BLOB, self._uid, lambda g: g < generation)

    def _parse(self, pointer: Any) -> tuple[int, int, int]:
        try:
            values = tuple(pointer[k] for k in ("generation", "parts", "crc"))
        except (KeyError, TypeError):
            values = ()
        if len(values) != 3 or not all(isinstance(v, int) and v >= 0 for v in values):
            raise CorruptStatusError(self._bad(f"status.snapshot {pointer!r} is malformed"))
        generation, parts, crc = values
        if parts < 1:
            raise CorruptStatusError(self._bad(f"status.snapshot {pointer!r} has no parts"))
        return generation, parts, crc

    def _delete_others(self, generation: int) -> None:
        """Delete the parts of every generation but `generation`, now: those of one a dead
        controller wrote but never named (the next save would reuse its number) and of old
        ones whose deletion did not happen. Not in the background: a deletion queued now
        could run after this controller's next save and take its parts."""
        for obj in self.api.list(CONFIG_MAP, self.namespace, selector(self.name, BLOB)):
            if not is_part_of(obj, self.name, BLOB, self._uid):
                continue
            parsed = parsed_part(obj)
            if parsed is None or parsed[0] != generation:
                delete_quietly(self.api, self.namespace, name_of(obj))

    @property
    def _uid(self) -> str:
        return str((self._owner or {}).get("uid", ""))

    def _part(self, generation: int, k: int, parts: int) -> bytes:
        name = snapshot_name(self.name, uid_tag(self._owner or {}), generation, k)
        try:
            obj = self.api.get(CONFIG_MAP, self.namespace, name)
        except ApiError as exc:
            if exc.not_found:
                raise CorruptStatusError(self._bad(f"snapshot part {name} is missing")) from None
            raise
        parsed = parsed_part(obj) if is_part_of(obj, self.name, BLOB, self._uid) else None
        if parsed is None or parsed[:3] != (generation, k, parts):
            raise CorruptStatusError(self._bad(f"ConfigMap {name} is not part {k} of {parts}"))
        return parsed[3]

    def _bad(self, what: str) -> str:
        return (
            f"aegis {self.namespace}/{self.name}: {what}; delete the AegisJob and submit it "
            "again to start the job afresh"
        )
