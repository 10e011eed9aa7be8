"""A version's plan: a state dict flattened, checked and laid out before anything is written.

`plan_state(state, step)` flattens the state dict (tree.py), serialises its non-tensor values
(a clear `SaveInputError` for one that cannot be) and lays out the version (wire.py): where
each tensor's record and raw bytes go, the index and the DCP metadata. Nothing is written
yet, so a bad state dict touches no memory; slot.py writes and reads versions.

A training job saves the same structure every step: the same keys, tensors of the same dtypes
and shapes. The layout of the last plan is kept as a `Template` (no tensor of it: nothing is
held alive) and a state dict whose walk matches it is planned from it, its values checked
one by one, without flattening it again; anything else is planned in full.
"""

from __future__ import annotations

import io
import json
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from aegis.checkpoint import wire
from aegis.checkpoint.framing import Framing, aligned, check_round_trip, framing
from aegis.checkpoint.tree import Leaf, TreeError, flatten, path_to_json, signature
from aegis.checkpoint.tree import Path as TreePath

INDEX_VERSION = 1


class SaveInputError(ValueError):
    """A state dict that cannot be saved; the message names the entry and says why."""


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
    template: Template | None = None  # the layout it shares with other plans (plan_state's)

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


@dataclass(frozen=True)
class Template:
    """The layout of a planned state dict without its values: a state dict with the same
    walk (`signature`) whose values fit it (tensors of the same dtypes and shapes, objects
    serialised to the same lengths) is laid out the same."""

    signature: list[object]
    slots: tuple[int, ...]  # per leaf in walk order: i >= 0 tensor i, ~j object j
    tensors: tuple[tuple[Leaf, Framing, int, torch.dtype, torch.Size], ...]  # leaf, record
    objects: tuple[tuple[Leaf, int, int], ...]  # leaf (no value), blob length, record
    empties: list[TreePath]
    data_len: int
    index: bytes
    meta: bytes


_templates: dict[int, Template] = {}  # kind -> the layout of plan_state's last full plan


def plan_state(state: Mapping[Any, Any], step: int, kind: int = wire.KIND_STATE) -> Plan:
    """Lay out `state` as version `step` (SaveInputError if it cannot be saved): from the
    last layout when `state` fits it, else in full."""
    check_round_trip()
    template = _templates.get(kind)
    if template is not None:
        plan = _from_template(template, state, step, kind)
        if plan is not None:
            return plan
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
    plan.template = _templates[kind] = _template(state, leaves, plan)
    return plan


def _template(state: Mapping[Any, Any], leaves: list[Leaf], plan: Plan) -> Template:
    tokens, values = signature(state)
    same = len(values) == len(leaves)
    if not same or any(v is not x.value for v, x in zip(values, leaves, strict=True)):
        raise AssertionError("tree.signature walks a state dict as tree.flatten does")
    tensor_at = {id(t.leaf): n for n, t in enumerate(plan.tensors)}
    object_at = {id(o.leaf): n for n, o in enumerate(plan.objects)}
    return Template(
        tokens,
        tuple(tensor_at[id(x)] if id(x) in tensor_at else ~object_at[id(x)] for x in leaves),
        tuple(
            (Leaf(t.leaf.path, t.leaf.fqn, None), t.frame, t.record, t.tensor.dtype, t.tensor.shape)
            for t in plan.tensors
        ),
        tuple((Leaf(o.leaf.path, o.leaf.fqn, None), len(o.blob), o.record) for o in plan.objects),
        plan.empties,
        plan.data_len,
        plan.index,
        plan.meta,
    )


def _from_template(
    template: Template, state: Mapping[Any, Any], step: int, kind: int
) -> Plan | None:
    """`state` laid out as `template`, None when it does not fit (SaveInputError for a
    value that cannot be saved, as the full plan would raise)."""
    if not isinstance(state, Mapping):
        return None
    tokens, values = signature(state)
    if tokens != template.signature:
        return None
    tensors: list[TensorItem] = []
    objects: list[ObjectItem] = []
    for value, slot in zip(values, template.slots, strict=True):
        if slot >= 0:
            leaf, frame, record, dtype, shape = template.tensors[slot]
            if not isinstance(value, torch.Tensor) or value.dtype != dtype or value.shape != shape:
                return None
            _check_tensor(leaf, value)
            tensors.append(TensorItem(leaf, value, frame, record))
        else:
            leaf, length, record = template.objects[~slot]
            if isinstance(value, torch.Tensor):
                return None
            blob = _blob(Leaf(leaf.path, leaf.fqn, value))
            if len(blob) != length:
                return None
            objects.append(ObjectItem(leaf, blob, record))
    return Plan(
        kind,
        step,
        tensors,
        objects,
        template.empties,
        template.data_len,
        template.index,
        template.meta,
        template,
    )


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
