"""The torch.distributed.checkpoint `.metadata` of one version's data file.

What `dcp.save(sd, no_dist=True)` would write for the same state dict (checked by the tests
against DCP's own output): one chunk per tensor at offset zero, a BytesStorageMetadata per
other value, the storage info of each record in `__0_0.distcp`, the flatten mapping as the
planner data. Pickled here, in the rank, so that the agent (no torch) only copies bytes.
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Sequence

import torch
import torch.distributed.checkpoint.filesystem
from torch.distributed.checkpoint.filesystem import _StorageInfo
from torch.distributed.checkpoint.metadata import (
    BytesStorageMetadata,
    ChunkStorageMetadata,
    Metadata,
    MetadataIndex,
    StorageMeta,
    TensorProperties,
    TensorStorageMetadata,
)

from aegis.checkpoint.disk import DATA_FILE
from aegis.checkpoint.tree import Path

DCP_VERSION: str = str(
    getattr(torch.distributed.checkpoint.filesystem, "CURRENT_DCP_VERSION", "1.0.0")
)


def dcp_path(path: Path) -> tuple[str | int, ...]:
    """DCP's object path of an entry (dict keys as str, list indices as int)."""
    return tuple(key if kind == "l" else str(key) for kind, key in path)


def metadata_bytes(
    tensors: Sequence[tuple[Path, str, torch.dtype, tuple[int, ...], int, int]],
    objects: Sequence[tuple[Path, str, int, int]],
) -> bytes:
    """The pickled Metadata: `tensors` as (path, fqn, dtype, shape, record offset, record
    length), `objects` as (path, fqn, record offset, record length)."""
    state_md: dict[str, TensorStorageMetadata | BytesStorageMetadata] = {}
    storage: dict[MetadataIndex, _StorageInfo] = {}
    mapping: dict[str, tuple[str | int, ...]] = {}
    for path, fqn, dtype, shape, off, length in tensors:
        size = torch.Size(shape)
        zero = torch.Size([0] * len(shape))
        state_md[fqn] = TensorStorageMetadata(
            TensorProperties(dtype=dtype), size, [ChunkStorageMetadata(offsets=zero, sizes=size)]
        )
        storage[MetadataIndex(fqn, zero, 0)] = _StorageInfo(DATA_FILE, off, length)
        mapping[fqn] = dcp_path(path)
    for path, fqn, off, length in objects:
        state_md[fqn] = BytesStorageMetadata()
        storage[MetadataIndex(fqn)] = _StorageInfo(DATA_FILE, off, length)
        mapping[fqn] = dcp_path(path)
    md = Metadata(
        state_dict_metadata=state_md,
        planner_data=mapping,
        storage_data=storage,
        storage_meta=StorageMeta(save_id=str(uuid.uuid4())),
        version=DCP_VERSION,
    )
    return pickle.dumps(md)
