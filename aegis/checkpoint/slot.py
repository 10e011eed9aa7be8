"""One version of a rank's state written into a buffer, and read back.

`write_version(plan, buf, whole)` fills a buffer with a plan (plan.py): each tensor's framing
and raw bytes (one copy; device tensors straight into the buffer, pinned when CUDA is there),
the values, the index, the DCP metadata, and the header last. `read_version(path)` maps a
version privately (copy-on-write: zero copy, and the file is never changed by the rank) and
rebuilds the state dict; `read_persisted(dir)` reads a persisted rank directory the same way.
"""

from __future__ import annotations

import ctypes
import io
import json
import mmap
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from aegis.checkpoint import disk, wire
from aegis.checkpoint.plan import Plan
from aegis.checkpoint.tree import Path as TreePath
from aegis.checkpoint.tree import TreeError, path_from_json, unflatten


class VersionError(RuntimeError):
    """A version (in memory or on disk) that cannot be read back."""


Probe = Callable[[str], None]


def write_version(
    plan: Plan,
    buf: mmap.mmap,
    whole: torch.Tensor,
    probe: Probe | None = None,
    *,
    framed: bool = False,
) -> None:
    """Fill `buf` (the version file, mapped; `whole` a uint8 tensor over it) with `plan`.
    `framed`: the buffer already holds a version of the same layout (plan.template), whose
    tensor framing, index and metadata are the same bytes: only the data, the values and the
    header are written. `probe(point)` is called between the parts (tests crash the rank
    there)."""
    view = memoryview(buf)
    address = whole.data_ptr()
    base = wire.DATA_OFFSET
    cuda = False
    half = len(plan.tensors) // 2
    for n, t in enumerate(plan.tensors):
        if probe is not None and n == half:
            probe("tensors-half")
        frame = t.frame
        data = base + t.record + len(frame.prefix)
        if not framed:
            view[data - len(frame.prefix) : data] = frame.prefix
            view[data + frame.nbytes : data + frame.nbytes + len(frame.suffix)] = frame.suffix
        if frame.nbytes:
            src = t.tensor
            if src.is_cpu and src.is_contiguous():  # a plain memcpy
                ctypes.memmove(address + data, src.data_ptr(), frame.nbytes)
            else:  # strided, or on a device: torch copies (device memory straight in)
                dst = whole[data : data + frame.nbytes].view(src.dtype).view(src.shape)
                cuda = cuda or src.is_cuda
                dst.copy_(src.detach(), non_blocking=src.is_cuda)
    if cuda:
        torch.cuda.synchronize()
    if probe is not None:
        probe("tensors-done")
    for o in plan.objects:
        start = base + o.record
        view[start : start + len(o.blob)] = o.blob
    if not framed:
        view[plan.index_off : plan.index_off + len(plan.index)] = plan.index
        view[plan.meta_off : plan.meta_off + len(plan.meta)] = plan.meta
    if probe is not None:
        probe("before-header")
    view[0 : wire.HEADER.size] = plan.header().pack()
    view.release()


def _dtype(name: object) -> torch.dtype:
    dtype = getattr(torch, str(name), None)
    if not isinstance(dtype, torch.dtype):
        raise VersionError(f"unknown dtype {name!r} in a version's index")
    return dtype


def _rebuild(
    index: bytes, data: torch.Tensor, blob_at: Callable[[int, int], bytes]
) -> dict[Any, Any]:
    """The state dict of an index whose data file is `data` (uint8)."""
    try:
        obj = json.loads(index)
        entries: list[tuple[TreePath, object]] = []
        for e in obj["entries"]:
            path = path_from_json(e[0])
            if e[1] == "t":
                dtype, shape, off, n = _dtype(e[2]), tuple(e[3]), int(e[4]), int(e[5])
                if n == 0:
                    entries.append((path, torch.empty(shape, dtype=dtype)))
                else:
                    entries.append((path, data[off : off + n].view(dtype).view(shape)))
            else:
                raw = blob_at(int(e[2]), int(e[3]))
                entries.append((path, torch.load(io.BytesIO(raw), weights_only=False)))
        empties = [path_from_json(p) for p in obj.get("empty", [])]
    except (KeyError, IndexError, TypeError, ValueError, RuntimeError, TreeError) as exc:
        raise VersionError(f"cannot rebuild the state dict: {exc}") from None
    return unflatten(entries, empties)


def read_version(
    path: str | os.PathLike[str], expect_step: int | None = None
) -> tuple[int, dict[Any, Any]]:
    """(step, state dict) of the version file at `path`, mapped privately: its tensors share
    the file's pages until written (copy-on-write), and the file never changes."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        buf = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    try:
        head = wire.Header.unpack(bytes(buf[: wire.HEADER.size]), size)
    except wire.WireError as exc:
        raise VersionError(str(exc)) from None
    if expect_step is not None and head.step != expect_step:
        raise VersionError(f"{path} holds step {head.step}, not {expect_step}")
    whole = torch.frombuffer(buf, dtype=torch.uint8)
    data = whole[wire.DATA_OFFSET : wire.DATA_OFFSET + head.data_len]
    index = bytes(buf[head.index_off : head.index_off + head.index_len])
    base = wire.DATA_OFFSET

    def blob_at(off: int, n: int) -> bytes:
        return bytes(buf[base + off : base + off + n])

    return head.step, _rebuild(index, data, blob_at)


def read_persisted(where: str | os.PathLike[str]) -> dict[Any, Any]:
    """The state dict of a persisted rank directory (disk.py)."""
    folder = Path(where)
    try:
        index = (folder / disk.INDEX_FILE).read_bytes()
        with open(folder / disk.DATA_FILE, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            buf: mmap.mmap | bytes = b""
            if size == 0:
                data = torch.empty(0, dtype=torch.uint8)
            else:
                buf = mmap.mmap(
                    f.fileno(), size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE
                )
                data = torch.frombuffer(buf, dtype=torch.uint8)
    except OSError as exc:
        raise VersionError(f"cannot read the persisted copy {folder}: {exc}") from None

    def blob_at(off: int, n: int) -> bytes:
        return bytes(buf[off : off + n])

    return _rebuild(index, data, blob_at)


def version_bytes(path: str | os.PathLike[str], step: int) -> memoryview:
    """The data file of the version at `path` (which must hold `step`), mapped read-only."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        buf = mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ)
    try:
        head = wire.Header.unpack(bytes(buf[: wire.HEADER.size]), size)
    except wire.WireError as exc:
        raise VersionError(str(exc)) from None
    if head.step != step:
        raise VersionError(f"{path} holds step {head.step}, not {step}")
    return memoryview(buf)[wire.DATA_OFFSET : wire.DATA_OFFSET + head.data_len]
