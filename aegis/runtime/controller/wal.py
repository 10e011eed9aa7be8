"""The controller's write-ahead log: one checksummed JSON line per group commit.

A line is `<crc32 of the JSON, 8 hex digits> <JSON object>\\n`; the object carries its record
number under "n" (numbers go up by one, across resets). `append` returns once the line is on
disk (write + fsync); a failed append cuts the file back to its last good length, so a
partial line is never followed by another record. `read` returns the records in order and
drops a torn tail (a last line without its newline, or whose checksum does not match: the
controller died while writing it, and nobody was told about it); a bad line anywhere else is
a CorruptStatusError naming it. docs/persistence.md has the crash-consistency argument.
"""

from __future__ import annotations

import json
import logging
import os
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from aegis.protocol import json_bytes
from aegis.runtime.controller.store import fsync_dir
from aegis.runtime.errors import CorruptStatusError

log = logging.getLogger(__name__)
FIX = "move it and the status file beside it away to start the job afresh"


@dataclass(frozen=True)
class WalRecord:
    """One record as read back: its number, its JSON object and its line in the file."""

    number: int
    body: dict[str, Any]
    line: int


class Log(Protocol):
    """What the controller needs of its write-ahead log: a file here (`WriteAheadLog`), one
    ConfigMap per record on Kubernetes (aegis.k8s.cm_wal)."""

    @property
    def where(self) -> str:
        """Where the records are, for messages."""
        ...

    @property
    def fix(self) -> str:
        """How to start the job afresh when the log cannot be replayed."""
        ...

    def read(self) -> list[WalRecord]:
        """The whole records, oldest first (a torn last record is dropped)."""
        ...

    def append(self, number: int, body: Mapping[str, Any]) -> None:
        """Make one record durable (called one at a time, never beside `reset`)."""
        ...

    def reset(self) -> None:
        """Drop every record (a snapshot just saved covers them)."""
        ...

    def close(self) -> None:
        """Release what the log holds."""
        ...


def encode_line(number: int, body: Mapping[str, Any]) -> bytes:
    """The bytes of one record line (the body gets "n" = `number`)."""
    data = json_bytes.dumps({"n": number, **body})
    return b"%08x %s\n" % (zlib.crc32(data), data)


def decode_line(raw: bytes) -> dict[str, Any] | None:
    """The JSON object of one line (without its newline), None if torn or tampered with (it
    keeps its "n")."""
    crc, _, data = raw.partition(b" ")
    try:
        if len(crc) != 8 or int(crc, 16) != zlib.crc32(data):
            return None
        obj = json.loads(data)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("n"), int):
        return None
    return obj


class WriteAheadLog:
    """Appends records durably to one file; `reset` empties it once a snapshot covers it."""

    def __init__(
        self, path: str | os.PathLike[str], on_full: Callable[[OSError], bool] | None = None
    ) -> None:
        """`on_full(exc)`: called when an append fails; True: room was made, try again."""
        self.path = Path(path)
        self.on_full = on_full
        self._fd: int | None = None
        self._good = 0  # length of the file up to the end of the last whole record
        self.torn_tail = False  # `read` dropped a torn last line (cut at the next append)

    def read(self) -> list[WalRecord]:
        """The whole records in the file, oldest first (a torn last line is dropped)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            self._good, self.torn_tail = 0, False
            return []
        except OSError as exc:
            raise CorruptStatusError(f"{self.path}: cannot read the log: {exc}; {FIX}") from None
        lines = data.split(b"\n")
        tail = lines.pop()  # b"" when the file ends with a newline
        records: list[WalRecord] = []
        offset = 0
        for index, raw in enumerate(lines):
            body = decode_line(raw)
            if body is None:
                if index == len(lines) - 1 and not tail:
                    self.torn_tail = True  # the last line: a write cut short, never acknowledged
                    break
                raise CorruptStatusError(
                    f"{self.path}:{index + 1} (byte {offset}): record {_guess_number(raw)} is "
                    f"corrupt (bad checksum or JSON) and records follow it; {FIX}"
                )
            records.append(WalRecord(body.pop("n"), body, index + 1))
            offset += len(raw) + 1
        self.torn_tail = self.torn_tail or bool(tail)
        if self.torn_tail:  # never dropped without a word
            log.warning(
                "%s: the last record, from byte %d (%d bytes), is torn (a write cut short, "
                "never acknowledged): dropped",
                self.path,
                offset,
                len(data) - offset,
            )
        self._good = offset
        return records

    def append(self, number: int, body: Mapping[str, Any]) -> None:
        """Write one record and fsync it; on OSError the file is cut back (best effort). The
        controller calls it in a worker thread (the event loop goes on reading the bus during
        the fsync), one call at a time and never beside `reset`."""
        data = encode_line(number, body)
        fd = self._open()
        try:
            if self.torn_tail or os.fstat(fd).st_size != self._good:
                os.ftruncate(fd, self._good)  # a torn tail or a failed append: cut it off
                self.torn_tail = False
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError as exc:
            self._cut_back(fd)
            if self.on_full is not None and self.on_full(exc):
                self.append(number, body)  # room was made: once more
                return
            raise
        self._good += len(data)

    def reset(self) -> None:
        """Empty the log (every record is in the snapshot just saved)."""
        fd = self._open()
        os.ftruncate(fd, 0)
        os.fsync(fd)
        self._good, self.torn_tail = 0, False

    @property
    def size(self) -> int:
        """Bytes of whole records in the file."""
        return self._good

    @property
    def where(self) -> str:
        """The file's path."""
        return str(self.path)

    @property
    def fix(self) -> str:
        """How to start afresh: move the status file and this log away."""
        return f"move the status file and {self.path.name} away to start the job afresh"

    def close(self) -> None:
        """Close the file (every append was already fsynced)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _open(self) -> int:
        if self._fd is None:
            existed = self.path.exists()
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            if not existed:  # the new name must survive a crash as much as its content
                fsync_dir(self.path.parent)
        return self._fd

    def _cut_back(self, fd: int) -> None:
        try:
            os.ftruncate(fd, self._good)
        except OSError:
            self.torn_tail = True  # try again before the next append


def _guess_number(raw: bytes) -> str:
    """The record number a damaged line seems to hold ("?" if none can be read)."""
    marker = raw.find(b'"n":')
    if marker < 0:
        return "?"
    digits = raw[marker + 4 : marker + 24].split(b",")[0]
    return digits.decode("ascii", "replace") if digits.isdigit() else "?"
