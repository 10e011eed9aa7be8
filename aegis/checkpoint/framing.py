"""One tensor as a `torch.save` record whose data bytes are copied, not serialised.

torch.distributed.checkpoint's FileSystemReader reads each tensor of a data file with
`torch.load` of its (offset, length) slice: a `torch.save` zip archive. Such an archive of a
contiguous tensor is the same bytes for every tensor of one dtype and shape, except its data
record, which holds the raw bytes uncompressed (64-byte aligned). So the archive is made once
per (dtype, shape) from an empty tensor and cut around its data: `Framing.prefix`, the data,
`Framing.suffix`. A save writes the prefix, copies the tensor's bytes, writes the suffix:
no pickling of tensor data and no copy but the one into shared memory. The zip's CRC fields
are written as torch does when `compute_crc32` is off (0); `torch.load` does not check them.

`check_round_trip()` (run once per process before the first save) proves on this torch that
such a record loads back as the tensor it frames.
"""

from __future__ import annotations

import contextlib
import io
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

import torch

_LOCAL_HEADER = 30  # fixed part of a zip local file header
ALIGN = 64  # records start on 64-byte boundaries, so each one's data is 64-byte aligned


class FramingError(RuntimeError):
    """This torch writes a tensor's archive in a way the framing does not understand."""


@dataclass(frozen=True)
class Framing:
    """The bytes of a tensor's torch.save archive before and after its raw data."""

    prefix: bytes
    suffix: bytes
    nbytes: int

    @property
    def length(self) -> int:
        """The whole record's length."""
        return len(self.prefix) + self.nbytes + len(self.suffix)


_cache: dict[tuple[torch.dtype, tuple[int, ...]], Framing] = {}
_checked = False


@contextlib.contextmanager
def _no_crc() -> Iterator[None]:
    config = getattr(getattr(torch.utils, "serialization", None), "config", None)
    save = getattr(config, "save", None)
    old = getattr(save, "compute_crc32", None)
    if save is None or old is None:
        yield
        return
    save.compute_crc32 = False
    try:
        yield
    finally:
        save.compute_crc32 = old


def framing(dtype: torch.dtype, shape: tuple[int, ...]) -> Framing:
    """The framing of a contiguous CPU tensor of `dtype` and `shape` (made once, cached)."""
    key = (dtype, shape)
    found = _cache.get(key)
    if found is None:
        found = _cache[key] = _make(dtype, shape)
    return found


def _make(dtype: torch.dtype, shape: tuple[int, ...]) -> Framing:
    empty = torch.empty(shape, dtype=dtype)
    buf = io.BytesIO()
    with _no_crc():
        torch.save(empty, buf)
    raw = buf.getvalue()
    nbytes = empty.numel() * empty.element_size()
    try:
        names = [i for i in zipfile.ZipFile(io.BytesIO(raw)).infolist() if _is_data(i.filename)]
    except zipfile.BadZipFile as exc:
        raise FramingError(f"torch.save did not write a zip archive: {exc}") from None
    if len(names) != 1 or names[0].file_size != nbytes or names[0].compress_type != 0:
        raise FramingError(f"unexpected archive of a {dtype} tensor of shape {list(shape)}")
    at = names[0].header_offset
    name_len, extra_len = struct.unpack_from("<HH", raw, at + 26)
    start = at + _LOCAL_HEADER + name_len + extra_len
    return Framing(raw[:start], raw[start + nbytes :], nbytes)


def _is_data(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 3 and parts[1] == "data" and parts[2] == "0"


def check_round_trip() -> None:
    """FramingError unless a framed record loads back as its tensor on this torch (once)."""
    global _checked
    if _checked:
        return
    probe = torch.arange(12, dtype=torch.float32).view(3, 4)
    f = framing(probe.dtype, tuple(probe.shape))
    record = f.prefix + probe.numpy().tobytes() + f.suffix
    back = torch.load(io.BytesIO(record), map_location="cpu", weights_only=True)
    if not (isinstance(back, torch.Tensor) and torch.equal(back, probe)):
        raise FramingError("a framed tensor record does not load back on this torch")
    _checked = True


def aligned(n: int) -> int:
    """`n` rounded up to ALIGN."""
    return -(-n // ALIGN) * ALIGN
