"""The write-ahead log of a job too large for its Aegis CR: one ConfigMap (or a few) per record.

`ConfigMapWal` is the runtime's `Log` (aegis.runtime.controller.wal) on the API server, for the
jobs whose status does not fit in their CR (aegis.k8s.chunked_store holds their snapshots).
Record `n` is the line a file WAL would hold (its checksum, its JSON with "n"), compressed and
split over ConfigMaps `<cr>-wal-<uid8>-<n>-<k>` (aegis.k8s.blobs), created in order of k.
Creating an object is atomic, so a record is whole once its last part exists; the controller
creates record n + 1 only after every part of n, so only the last record can lack parts: that
one was never acknowledged (the controller died writing it, or its create failed), and `read`
drops it as the file WAL drops a torn last line; the next `append` deletes its parts first. A
part that exists already with the same content is a create retried after its answer was lost;
with other content, another controller wrote it: StatusConflictError (crash-only, as the CR
store).

`reset` (after a snapshot, which covers every record so far) deletes the records in a
background thread: a resumed controller skips the records its snapshot covers, so a deletion
that fails or is cut short by a crash costs a later `reset` (or the CR's deletion, which
takes its ConfigMaps with it) nothing more than a list. Only whole records' numbers are
deleted so: a torn record's number is written again by the next append, which a deletion
still queued must not take.
"""

from __future__ import annotations

import logging
import threading
import zlib
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

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
from aegis.k8s.errors import AegisCrMissingError, ApiError, StatusConflictError
from aegis.k8s.resources import AEGIS, CONFIG_MAP, Resource
from aegis.runtime.controller.wal import WalRecord, decode_line, encode_line
from aegis.runtime.errors import CorruptStatusError

log = logging.getLogger(__name__)
BLOB = "wal"


class BlobApi(Protocol):
    """The calls the ConfigMap stores make (KubeApi has them; tests may pass a fake)."""

    def get(self, res: Resource, namespace: str | None, name: str, sub: str = "") -> dict[str, Any]:
        """Read an object."""
        ...

    def list(
        self, res: Resource, namespace: str | None = None, label_selector: str = ""
    ) -> list[dict[str, Any]]:
        """The items of a collection."""
        ...

    def create(
        self, res: Resource, namespace: str | None, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Create an object (ApiError 409 if it exists)."""
        ...

    def delete(self, res: Resource, namespace: str | None, name: str) -> None:
        """Delete an object (ApiError 404 if it is gone)."""
        ...


class Deleter:
    """Deletes ConfigMaps one at a time in a thread of its own (never on the caller's path)."""

    def __init__(self, api: BlobApi, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aegis-cm-delete")
        self._closed = threading.Event()  # a deletion under way stops at its next object

    def delete_matching(self, cr: str, blob: str, uid: str, doomed: Callable[[int], bool]) -> None:
        """`delete_now` later, in the deleter's thread (a failure is logged: a later call
        deletes what is left)."""
        self._pool.submit(self._quietly, cr, blob, uid, doomed)

    def delete_now(self, cr: str, blob: str, uid: str, doomed: Callable[[int], bool]) -> None:
        """Delete the parts of `cr`'s `blob` whose number `doomed(number)` is true (or that do
        not parse), and every part of an earlier CR of that name (its uid is not `uid`)."""
        for obj in self.api.list(CONFIG_MAP, self.namespace, selector(cr, blob)):
            if self._closed.is_set():
                return  # the rest is left for a later call (or the garbage collector)
            if not is_part_of(obj, cr, blob, None):
                continue
            part = parsed_part(obj)
            if part is None or doomed(part[0]) or not is_part_of(obj, cr, blob, uid):
                delete_quietly(self.api, self.namespace, name_of(obj))

    def drain(self, timeout: float = 60.0) -> None:
        """Wait for the deletions asked for so far (TimeoutError after `timeout` s)."""
        self._pool.submit(lambda: None).result(timeout)

    def close(self) -> None:
        """Stop at once (the process's exit does not wait for a long deletion): deletions
        not yet made are left to a later reset, a later load or the CR's deletion."""
        self._closed.set()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _quietly(self, cr: str, blob: str, uid: str, doomed: Callable[[int], bool]) -> None:
        try:
            self.delete_now(cr, blob, uid, doomed)
        except (ApiError, OSError) as exc:
            log.warning("aegis %s/%s: %s parts left for later: %s", self.namespace, cr, blob, exc)


def delete_quietly(api: BlobApi, namespace: str, name: str) -> None:
    """Delete a ConfigMap; one that is gone already is fine."""
    try:
        api.delete(CONFIG_MAP, namespace, name)
    except ApiError as exc:
        if not exc.not_found:
            raise


def record_name(cr: str, tag: str, number: int, part: int) -> str:
    """The ConfigMap holding part `part` of WAL record `number` (`tag`: `uid_tag`)."""
    return f"{cr}-wal-{tag}-{number}-{part}"


class ConfigMapWal:
    """The write-ahead log of Aegis CR `cr`, in ConfigMaps it owns (see the module)."""

    def __init__(
        self, api: BlobApi, namespace: str, cr: str, deleter: Deleter, part_bytes: int = PART_BYTES
    ) -> None:
        self.api = api
        self.part_bytes = part_bytes
        self.namespace = namespace
        self.cr = cr
        self.deleter = deleter
        self.torn: list[str] = []  # the parts of a torn last record (deleted at the next append)
        self._last = 0  # the highest number of a whole record read or appended
        self._owner: dict[str, Any] | None = None

    @property
    def where(self) -> str:
        """Where the records are."""
        return f"the WAL of aegis {self.namespace}/{self.cr} (its ConfigMaps {self.cr}-wal-*)"

    @property
    def fix(self) -> str:
        """How to start afresh."""
        return "delete the AegisJob and submit it again to start the job afresh"

    def read(self) -> list[WalRecord]:
        """The whole records, oldest first; a last record missing parts is dropped."""
        parts = self._parts()
        self.torn = []
        records: list[WalRecord] = []
        numbers = sorted(parts)
        for number in numbers:
            got = parts[number]
            totals = {total for total, _, _ in got.values()}
            if len(totals) != 1 or len(got) != totals.pop():
                if number == numbers[-1]:
                    self.torn = [name for _, _, name in got.values()]
                    break
                raise CorruptStatusError(
                    f"{self.where}:{number}: record {number} lacks parts and records follow "
                    f"it; {self.fix}"
                )
            records.append(self._record(number, [got[k][1] for k in sorted(got)]))
        # not a torn record's number: the next append reuses it, and `reset` (in the
        # background) deletes every record up to `_last`
        self._last = records[-1].number if records else 0
        return records

    def _parts(self) -> dict[int, dict[int, tuple[int, bytes, str]]]:
        """The record parts in the ConfigMaps: record number -> part -> (parts in the
        record, data, ConfigMap name)."""
        uid = self._owner_reference()["uid"]
        parts: dict[int, dict[int, tuple[int, bytes, str]]] = {}
        for obj in self.api.list(CONFIG_MAP, self.namespace, selector(self.cr, BLOB)):
            if not is_part_of(obj, self.cr, BLOB, uid):
                continue
            parsed = parsed_part(obj)
            if parsed is None:
                raise CorruptStatusError(
                    f"{self.where}: ConfigMap {name_of(obj)} is not a record part; {self.fix}"
                )
            number, k, total, data = parsed
            parts.setdefault(number, {})[k] = (total, data, name_of(obj))
        return parts

    def _record(self, number: int, parts: list[bytes]) -> WalRecord:
        try:
            line = join(parts)
        except zlib.error:
            body = None
        else:
            body = decode_line(line.rstrip(b"\n")) if line.endswith(b"\n") else None
        if body is None or body.get("n") != number:
            raise CorruptStatusError(
                f"{self.where}:{number}: record {number} is corrupt (bad checksum, JSON or "
                f"number); {self.fix}"
            )
        body.pop("n")
        return WalRecord(number, body, number)

    def append(self, number: int, body: Mapping[str, Any]) -> None:
        """Create record `number`'s parts (after deleting a torn record's); ApiError on a
        failure (the runner restarts the controller, which reads the log again)."""
        for name in self.torn:
            delete_quietly(self.api, self.namespace, name)
        self.torn = []
        chunks = split(encode_line(number, body), self.part_bytes)
        owner = self._owner_reference()
        for k, chunk in enumerate(chunks):
            name = record_name(self.cr, uid_tag(owner), number, k)
            obj = part_object(name, self.cr, BLOB, number, (k, len(chunks)), chunk, owner)
            try:
                self.api.create(CONFIG_MAP, self.namespace, obj)
            except ApiError as exc:
                if not exc.conflict:
                    raise
                self._same_part(name, (number, k, len(chunks), chunk))
        self._last = max(self._last, number)

    def _same_part(self, name: str, want: tuple[int, int, int, bytes]) -> None:
        """A part that exists already: ours (a create retried) or another writer's."""
        if parsed_part(self.api.get(CONFIG_MAP, self.namespace, name)) != want:
            raise StatusConflictError(
                f"aegis {self.namespace}/{self.cr}: WAL record {want[0]} was written by another "
                "controller; is a second one running this job?"
            )

    def reset(self) -> None:
        """Delete every record so far, in the background (a snapshot covers them)."""
        last, uid = self._last, self._owner_reference()["uid"]
        self.deleter.delete_matching(self.cr, BLOB, uid, lambda number: number <= last)

    def close(self) -> None:
        """Nothing to release (the deleter is the runner's)."""

    def _owner_reference(self) -> dict[str, Any]:
        if self._owner is None:
            try:
                cr = self.api.get(AEGIS, self.namespace, self.cr)
            except ApiError as exc:
                if exc.not_found:
                    where = f"aegis {self.namespace}/{self.cr}"
                    raise AegisCrMissingError(f"{where} not found") from None
                raise
            self._owner = owner_reference(cr)
        return self._owner
