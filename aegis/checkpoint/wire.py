"""What a rank and its node agent say about checkpoints, and the shape of one saved version
(pure code: no torch, no asyncio; both sides import it).

A version is one file in the agent's shared memory: a 64-byte header, the torch.distributed.
checkpoint data file of the rank's state at DATA_OFFSET (every tensor a `torch.save` record
of its raw bytes, every other value a `torch.save` of it), then the small index that rebuilds
the state dict, then the DCP `.metadata` of that data file. Persisting a version is copying
those three regions to files; no byte of tensor data is ever pickled or parsed by the agent.

Requests travel over the agent's unix socket as frames (4-byte big-endian length, JSON): each
names the rank by the token the agent gave it (AEGIS_CHECKPOINT_TOKEN); a token the agent did
not give is refused. `Reply.ok` is False with `error` saying why, and for a save that shared
memory cannot hold, `direct` names the directory to save to instead.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAGIC = b"AEGISCK1"
FORMAT_VERSION = 1
# magic, format version, kind, step, data length, index offset and length, metadata offset
# and length
HEADER = struct.Struct("<8sIIqQQQQQ")
DATA_OFFSET = 4096  # the data file starts on a page boundary (copied as is)
KIND_STATE = 0  # aegis.checkpoint.save: one rank's whole state dict
KIND_DCP = 1  # dcp.save(storage_writer=AegisStorageWriter(...)): this rank's part of a plan
MAX_FRAME = 256 << 20  # a global DCP metadata of a large sharded model fits
FRAME_LEN = struct.Struct(">I")


class WireError(ValueError):
    """A frame or a version file that is not what this module writes."""


@dataclass(frozen=True)
class Header:
    """Where a version file's regions lie."""

    kind: int
    step: int
    data_len: int
    index_off: int
    index_len: int
    meta_off: int
    meta_len: int

    def pack(self) -> bytes:
        """The header's bytes (HEADER.size)."""
        return HEADER.pack(
            MAGIC,
            FORMAT_VERSION,
            self.kind,
            self.step,
            self.data_len,
            self.index_off,
            self.index_len,
            self.meta_off,
            self.meta_len,
        )

    @classmethod
    def unpack(cls, raw: bytes, file_size: int) -> Header:
        """The header at the start of a version file of `file_size` bytes (WireError if the
        bytes are not one, or its regions do not fit in the file)."""
        if len(raw) < HEADER.size:
            raise WireError("version file shorter than its header")
        magic, version, kind, step, data_len, i_off, i_len, m_off, m_len = HEADER.unpack_from(raw)
        if magic != MAGIC or version != FORMAT_VERSION:
            raise WireError(f"not an aegis checkpoint version (magic {magic!r}, v{version})")
        head = cls(kind, step, data_len, i_off, i_len, m_off, m_len)
        ends = (DATA_OFFSET + data_len, i_off + i_len, m_off + m_len)
        if kind not in (KIND_STATE, KIND_DCP) or step < 0 or max(ends) > file_size:
            raise WireError(f"version header out of bounds: {head} in {file_size} bytes")
        return head


def persists(step: int, every: int) -> bool:
    """Whether the agent persists a committed `step` (every `every` steps; 0: never)."""
    return every > 0 and step % every == 0


def encode_frame(obj: Mapping[str, Any]) -> bytes:
    """One frame: its length, then the JSON object."""
    body = json.dumps(obj, separators=(",", ":")).encode()
    if len(body) > MAX_FRAME:
        raise WireError(f"frame of {len(body)} bytes is over {MAX_FRAME}")
    return FRAME_LEN.pack(len(body)) + body


def frame_length(prefix: bytes) -> int:
    """The body length announced by a frame's 4-byte prefix (WireError past MAX_FRAME)."""
    (n,) = FRAME_LEN.unpack(prefix)
    if n > MAX_FRAME:
        raise WireError(f"frame of {n} bytes announced, over {MAX_FRAME}")
    return int(n)


def decode_body(body: bytes) -> dict[str, Any]:
    """A frame's JSON object (WireError if it is not one)."""
    try:
        obj = json.loads(body)
    except ValueError as exc:
        raise WireError(f"frame is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise WireError("frame is not a JSON object")
    return obj


@dataclass(frozen=True)
class Reply:
    """The agent's answer to one request."""

    ok: bool
    error: str = ""
    fields: Mapping[str, Any] | None = None

    def get(self, key: str, default: Any = None) -> Any:
        """A field of the answer."""
        return (self.fields or {}).get(key, default)

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Reply:
        """The reply a frame holds."""
        ok = obj.get("ok") is True
        error = obj.get("error")
        return cls(ok, error if isinstance(error, str) else "", dict(obj))
