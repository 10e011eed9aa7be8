"""One version of a rank's state: planned, written into a buffer, and read back.

`plan_state(state, step)` flattens the state dict, serialises its non-tensor values (a clear
`SaveInputError` for one that cannot be) and lays out the version (wire.py): nothing is
written yet, so a bad state dict touches no memory. `write_version(plan, view)` then fills a
buffer: each tensor's framing and raw bytes (one copy; device tensors straight into the
buffer, pinned when CUDA is there), the values, the index, the DCP metadata, and the header
last. `read_version(path)` maps a version privately (copy-on-write: zero copy, and the file
is never changed by the rank) and rebuilds the state dict; `read_persisted(dir)` reads a
persisted rank directory the same way.
"""

from __future__ import annotations

import ctypes
import io
import json
import mmap
import os
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from aegis.checkpoint import disk, wire
from aegis.checkpoint.framing import Framing, aligned, check_round_trip, framing
from aegis.checkpoint.tree import Leaf, TreeError, flatten, path_from_json, path_to_json, unflatten
from aegis.checkpoint.tree import Path as TreePath

INDEX_VERSION = 1


class SaveInputError(ValueError):
    """A state dict that cannot be saved; the message names the entry and says why."""


class VersionError(RuntimeError):
    """A version (in memory or on disk) that cannot be read back."""


@dataclass
class TensorItem:
    """A tensor of the plan: where its record and its raw bytes go."""

    leaf: Leaf
    tensor: torch.Tensor
    frame: Framing
    record: int = 0  # record offset in the data file

    @property
    def data(self) -> int:
        """Where its raw bytes start in the data file."""
        return self.record + len(self.frame.prefix)


@dataclass
class ObjectItem:
    """A non-tensor value of the plan: its torch.save bytes."""

    leaf: Leaf
    blob: bytes
    record: int = 0


@dataclass
class Plan:
    """A laid-out version: what goes where (offsets in the version file)."""

    kind: int
    step: int
    tensors: list[TensorItem]
    objects: list[ObjectItem]
    empties: list[TreePath]
    data_len: int = 0
    index: bytes = b""
    meta: bytes = b""
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def index_off(self) -> int:
        """The index's offset in the version file."""
        return wire.DATA_OFFSET + aligned(self.data_len)

    @property
    def meta_off(self) -> int:
        """The metadata's offset in the version file."""
        return self.index_off + len(self.index)

    @property
    def total(self) -> int:
        """The version file's length."""
        return self.meta_off + len(self.meta)

    @property
    def tensor_bytes(self) -> int:
        """The raw tensor bytes it holds."""
        return sum(t.frame.nbytes for t in self.tensors)

    def header(self) -> wire.Header:
        """Its header."""
        return wire.Header(
            self.kind,
            self.step,
            self.data_len,
            self.index_off,
            len(self.index),
            self.meta_off,
            len(self.meta),
        )


_blob_cache: dict[str, tuple[bytes, bytes]] = {}  # fqn -> (pickle of the value, its blob)
_layout_cache: dict[object, tuple[bytes, bytes]] = {}  # structure -> (index, metadata)


def _check_tensor(leaf: Leaf, t: torch.Tensor) -> None:
    name = type(t).__name__
    if name in ("DTensor", "ShardedTensor"):
        raise SaveInputError(
            f"{leaf.fqn} is a {name}: save sharded state dicts with "
            "dcp.save(sd, storage_writer=aegis.checkpoint.AegisStorageWriter(step))"
        )
    if t.layout != torch.strided or t.is_quantized or t.is_nested or t.device.type == "meta":
        raise SaveInputError(f"{leaf.fqn}: a {t.layout} {t.device.type} tensor cannot be saved")


def _blob(leaf: Leaf) -> bytes:
    """torch.save of a non-tensor value (what DCP stores for it), reused while unchanged."""
    try:
        key = pickle.dumps(leaf.value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise SaveInputError(
            f"{leaf.fqn} cannot be serialised: {type(exc).__name__}: {exc}"
        ) from None
    cached = _blob_cache.get(leaf.fqn)
    if cached is not None and cached[0] == key:
        return cached[1]
    buf = io.BytesIO()
    try:
        torch.save(leaf.value, buf)
    except Exception as exc:
        raise SaveInputError(
            f"{leaf.fqn} cannot be serialised: {type(exc).__name__}: {exc}"
        ) from None
    blob = buf.getvalue()
    _blob_cache[leaf.fqn] = (key, blob)
    return blob


def plan_state(state: Mapping[Any, Any], step: int, kind: int = wire.KIND_STATE) -> Plan:
    """Lay out `state` as version `step` (SaveInputError if it cannot be saved)."""
    check_round_trip()
    try:
        leaves, empties = flatten(state)
    except TreeError as exc:
        raise SaveInputError(str(exc)) from None
    tensors: list[TensorItem] = []
    objects: list[ObjectItem] = []
    for leaf in leaves:
        if isinstance(leaf.value, torch.Tensor):
            t = leaf.value
            _check_tensor(leaf, t)
            tensors.append(TensorItem(leaf, t, framing(t.dtype, tuple(t.shape))))
        else:
            objects.append(ObjectItem(leaf, _blob(leaf)))
    plan = Plan(kind, step, tensors, objects, empties)
    _lay_out(plan)
    return plan


def plan_items(
    step: int, tensors: list[tuple[str, torch.Tensor]], blobs: list[tuple[str, bytes]]
) -> Plan:
    """Lay out the items of a sharded save (AegisStorageWriter) as version `step`: tensors
    (plain, this rank's shards) and already serialised values, each under its key."""
    check_round_trip()
    items = []
    for key, t in tensors:
        leaf = Leaf((("s", key),), key, t)
        _check_tensor(leaf, t)
        items.append(TensorItem(leaf, t, framing(t.dtype, tuple(t.shape))))
    objects = [ObjectItem(Leaf((("s", key),), key, None), blob) for key, blob in blobs]
    plan = Plan(wire.KIND_DCP, step, items, objects, [])
    _lay_out(plan)
    return plan


def _lay_out(plan: Plan) -> None:
    at = 0
    for t in plan.tensors:
        t.record = at
        at = aligned(at + t.frame.length)
    for o in plan.objects:
        o.record = at
        at += len(o.blob)
    plan.data_len = at
    key = (
        plan.kind,
        tuple(
            (t.leaf.path, t.tensor.dtype, t.frame.nbytes, tuple(t.tensor.shape))
            for t in plan.tensors
        ),
        tuple((o.leaf.path, len(o.blob)) for o in plan.objects),
        tuple(plan.empties),
    )
    cached = _layout_cache.get(key)
    if cached is None:
        if len(_layout_cache) > 8:
            _layout_cache.clear()
        cached = _layout_cache[key] = (
            _index(plan),
            _meta(plan) if plan.kind == wire.KIND_STATE else b"",
        )
    plan.index, plan.meta = cached


def _index(plan: Plan) -> bytes:
    entries: list[list[Any]] = [
        [
            path_to_json(t.leaf.path),
            "t",
            str(t.tensor.dtype).removeprefix("torch."),
            list(t.tensor.shape),
            t.data,
            t.frame.nbytes,
        ]
        for t in plan.tensors
    ]
    entries += [[path_to_json(o.leaf.path), "o", o.record, len(o.blob)] for o in plan.objects]
    obj = {
        "v": INDEX_VERSION,
        "kind": plan.kind,
        "entries": entries,
        "empty": [path_to_json(p) for p in plan.empties],
    }
    return json.dumps(obj, separators=(",", ":")).encode()


def _meta(plan: Plan) -> bytes:
    # torch.distributed.checkpoint takes ~1 s to import: a restarted rank's load() needs none
    from aegis.checkpoint.dcp_meta import metadata_bytes

    return metadata_bytes(
        [
            (
                t.leaf.path,
                t.leaf.fqn,
                t.tensor.dtype,
                tuple(t.tensor.shape),
                t.record,
                t.frame.length,
            )
            for t in plan.tensors
        ],
        [(o.leaf.path, o.leaf.fqn, o.record, len(o.blob)) for o in plan.objects],
    )


Probe = Callable[[str], None]


def write_version(
    plan: Plan, buf: mmap.mmap, whole: torch.Tensor, probe: Probe | None = None
) -> None:
    """Fill `buf` (the version file, mapped; `whole` a uint8 tensor over it) with `plan`.
    `probe(point)` is called between the parts (tests crash the rank there)."""
    view = memoryview(buf)
    address = whole.data_ptr()
    base = wire.DATA_OFFSET
    cuda = False
    half = len(plan.tensors) // 2
    for n, t in enumerate(plan.tensors):
        if probe is not None and n == half:
            probe("tensors-half")
        start = base + t.record
        view[start : start + len(t.frame.prefix)] = t.frame.prefix
        if t.frame.nbytes:
            src = t.tensor.detach()
            if src.device.type == "cpu" and src.is_contiguous():  # a plain memcpy
                ctypes.memmove(address + base + t.data, src.data_ptr(), t.frame.nbytes)
            else:  # strided, or on a device: torch copies (device memory straight in)
                dst = whole[base + t.data : base + t.data + t.frame.nbytes]
                dst = dst.view(t.tensor.dtype).view(t.tensor.shape)
                cuda = cuda or src.is_cuda
                dst.copy_(src, non_blocking=src.is_cuda)
        end = base + t.data + t.frame.nbytes
        view[end : end + len(t.frame.suffix)] = t.frame.suffix
    if cuda:
        torch.cuda.synchronize()
    if probe is not None:
        probe("tensors-done")
    for o in plan.objects:
        start = base + o.record
        view[start : start + len(o.blob)] = o.blob
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
