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

import heapq
import zlib
from collections import Counter
from collections.abc import Mapping
from typing import Any

from aegis.k8s.blobs import (
    PART_BYTES,
    is_part_of,
    join,
    owner_reference,
    parsed_part,
    part_object,
    split,
    uid_tag,
)
from aegis.k8s.cm_wal import BlobApi, Deleter, delete_quietly
from aegis.k8s.cr_store import CrStatusStore, status_from_cr
from aegis.k8s.errors import ApiError
from aegis.k8s.resources import CONFIG_MAP
from aegis.runtime.controller.store import SCHEMA_VERSION, Status
from aegis.runtime.errors import CorruptStatusError

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
    notable = (p for p, i in infos.items() if i.retries or i.last_failed_reason)
    shown = heapq.nsmallest(SHOWN_PODS, notable, key=lambda p: (-infos[p].retries, p))
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
        "podInfos": {p: infos[p].json_obj for p in shown},
        "snapshot": dict(pointer),
    }


def read_snapshot(api: BlobApi, namespace: str, cr: Mapping[str, Any]) -> tuple[int, Status] | None:
    """(generation, status) of the snapshot the Aegis CR object `cr` names, None if it names
    none (a fresh job, or one saved whole in its CR). It only reads: `aegis timeline` reads a
    job's so. CorruptStatusError says what is wrong."""
    name = str((cr.get("metadata") or {}).get("name", ""))
    status = cr.get("status")
    pointer = status.get("snapshot") if isinstance(status, dict) else None
    if pointer is None:
        return None
    generation, parts, crc = _parse(namespace, name, pointer)
    owner = owner_reference(cr)
    try:
        data = join([_part(api, namespace, owner, (generation, k, parts)) for k in range(parts)])
    except zlib.error:
        data = b""
    if not data or zlib.crc32(data) != crc:
        raise _corrupt(namespace, name, f"snapshot {generation} fails its checksum")
    return generation, Status.from_json(data.decode("utf-8"))


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
        """The status the CR's snapshot names (None before the first save). The parts of
        every other generation are deleted now: those of one a dead controller wrote but never
        named (the next save reuses its number) and old ones whose deletion did not happen.
        Not in the background: a deletion queued now could run after this controller's next
        save and take its parts."""
        obj = self.cr.read()
        self._owner = owner_reference(obj)
        found = read_snapshot(self.api, self.namespace, obj)
        generation, loaded = found or (0, status_from_cr(obj))
        self.deleter.delete_now(self.name, BLOB, self._owner["uid"], lambda g: g != generation)
        self.generation = generation
        return loaded

    def save(self, status: Status) -> None:
        """Write the status as generation + 1, make the CR name it, then delete the last."""
        if self._owner is None:  # the core loads before it saves; a store used alone may not
            self.load()
        owner = self._owner
        assert owner is not None
        generation = self.generation + 1
        data = status.encode()
        chunks = split(data, self.part_bytes)
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
        self.deleter.delete_matching(self.name, BLOB, owner["uid"], lambda g: g < generation)


def _parse(namespace: str, name: str, pointer: Any) -> tuple[int, int, int]:
    """(generation, parts, crc) of a CR's status.snapshot."""
    try:
        values = tuple(pointer[k] for k in ("generation", "parts", "crc"))
    except (KeyError, TypeError):
        values = ()
    if len(values) != 3 or not all(isinstance(v, int) and v >= 0 for v in values):
        raise _corrupt(namespace, name, f"status.snapshot {pointer!r} is malformed")
    if values[1] < 1:
        raise _corrupt(namespace, name, f"status.snapshot {pointer!r} has no parts")
    return values


def _part(
    api: BlobApi, namespace: str, owner: Mapping[str, Any], at: tuple[int, int, int]
) -> bytes:
    """The data of part k of K of snapshot generation g, `at` = (g, k, K)."""
    cr, (generation, k, parts) = str(owner["name"]), at
    name = snapshot_name(cr, uid_tag(owner), generation, k)
    try:
        obj = api.get(CONFIG_MAP, namespace, name)
    except ApiError as exc:
        if exc.not_found:
            raise _corrupt(namespace, cr, f"snapshot part {name} is missing") from None
        raise
    parsed = parsed_part(obj) if is_part_of(obj, cr, BLOB, str(owner["uid"])) else None
    if parsed is None or parsed[:3] != at:
        raise _corrupt(namespace, cr, f"ConfigMap {name} is not part {k} of {parts}")
    return parsed[3]


def _corrupt(namespace: str, name: str, what: str) -> CorruptStatusError:
    return CorruptStatusError(
        f"aegis {namespace}/{name}: {what}; delete the AegisJob and submit it again to start "
        "the job afresh"
    )
