"""The structured fault log: one JSON line per fault (aegis.protocol.faults.FaultRecord)."""

from __future__ import annotations

import json
import os
import threading
from typing import IO

from aegis.protocol.faults import FaultRecord

__all__ = ["FaultLogWriter", "FaultRecord", "read_fault_log"]


class FaultLogWriter:
    """Appends FaultRecords as JSON lines to a path or an open text stream (thread-safe)."""

    def __init__(self, target: str | os.PathLike[str] | IO[str]) -> None:
        self._path: str | None = None
        self._stream: IO[str] | None = None
        if isinstance(target, (str, os.PathLike)):
            self._path = os.fspath(target)
        else:
            self._stream = target
        self._lock = threading.Lock()

    def write(self, record: FaultRecord) -> None:
        """Append one line and flush it."""
        line = record.to_json() + "\n"
        with self._lock:
            if self._path is not None:
                with open(self._path, "a", encoding="utf-8") as f:
                    f.write(line)
            elif self._stream is not None:
                self._stream.write(line)
                self._stream.flush()


def read_fault_log(path: str | os.PathLike[str]) -> list[FaultRecord]:
    """Every record in a fault log file (one written before faults were typed reads as kind
    `other`: FaultRecord.from_obj)."""
    with open(path, encoding="utf-8") as f:
        return [FaultRecord.from_obj(json.loads(line)) for line in f if line.strip()]
