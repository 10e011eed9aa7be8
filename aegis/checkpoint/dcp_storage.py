"""torch.distributed.checkpoint into the node agent's memory, for sharded state dicts (FSDP,
DTensor):

    dcp.save(state_dict, storage_writer=AegisStorageWriter(step))
    dcp.load(state_dict, storage_reader=AegisStorageReader())  # the step the job restarts from

DCP plans the save as usual (across the ranks, with its collectives); each rank's writer puts
its write items (its shards, deduplicated replicated tensors, serialised values) into one
version in its agent's shared memory, laid out as a DCP data file; the coordinator's writer
gives its agent the global metadata. Persisted, a step is one DCP checkpoint at
`--checkpoint-dir/step-S` (the global `.metadata` names `rank-R/__0_0.distcp`), which
`dcp.load(sd, checkpoint_id=DIR/step-S)` reads without Aegis.

The reader restores from memory when every data file it needs is held by its own agent (a
one-node job, or a rank that reads only its own shards); otherwise, and after a reschedule, it
reads the persisted copy with DCP's FileSystemReader. The global metadata of a memory restore
comes from the coordinator's agent and is broadcast to the ranks (a collective inside
`read_metadata`, which DCP calls on every rank).
"""

from __future__ import annotations

import base64
import dataclasses
import io
import os
import pickle
import time
import uuid
from typing import Any, cast

import torch
import torch.distributed as dist
from torch.distributed._shard._utils import narrow_tensor_by_index
from torch.distributed.checkpoint.filesystem import FileSystemReader, _StorageInfo
from torch.distributed.checkpoint.metadata import Metadata, MetadataIndex, StorageMeta
from torch.distributed.checkpoint.planner import (
    LoadItemType,
    LoadPlan,
    LoadPlanner,
    SavePlan,
    SavePlanner,
    WriteItemType,
)
from torch.distributed.checkpoint.storage import StorageReader, StorageWriter, WriteResult
from torch.futures import Future

from aegis.checkpoint import api, disk
from aegis.checkpoint.client import AgentClient, AgentUnavailable
from aegis.checkpoint.plan import plan_items
from aegis.checkpoint.slot import version_bytes


def _key(index: MetadataIndex) -> str:
    offset = "" if index.offset is None else ",".join(map(str, index.offset))
    return f"{index.fqn}@{offset}#{index.index}"


def _client() -> AgentClient:
    client = api._agent()
    if client is None:
        raise api.CheckpointError("not running under an Aegis agent: nothing to save to")
    return client


class AegisStorageWriter(StorageWriter):
    """A DCP storage writer into the agent's memory, as step `step`."""

    def __init__(self, step: int) -> None:
        super().__init__()
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"step must be an int >= 0, not {step!r}")
        self.step = step
        self.is_coordinator = False
        self.rank = 0
        self.save_id = str(uuid.uuid4())

    def reset(self, checkpoint_id: str | os.PathLike[str] | None = None) -> None:
        """A new save (DCP calls this first); a checkpoint id is not used: the step is."""
        self.save_id = str(uuid.uuid4())

    def set_up_storage_writer(self, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        """Whether this rank writes the global metadata, and which rank it is."""
        self.is_coordinator = is_coordinator
        rank = kwargs.get("rank")
        if rank is None:
            rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
        self.rank = int(rank)

    def prepare_local_plan(self, plan: SavePlan) -> SavePlan:
        """The plan as DCP made it."""
        return plan

    def prepare_global_plan(self, plans: list[SavePlan]) -> list[SavePlan]:
        """Each rank's data file is `rank-R/__0_0.distcp` under the step's directory."""
        return [
            dataclasses.replace(p, storage_data=disk.rank_data_path(i)) for i, p in enumerate(plans)
        ]

    def write_data(self, plan: SavePlan, planner: SavePlanner) -> Future[list[WriteResult]]:
        """This rank's items into one version in its agent's memory."""
        path = cast(str, plan.storage_data)
        tensors, blobs, order = [], [], []
        for item in plan.items:
            data = planner.resolve_data(item)
            key = _key(item.index)
            if item.type == WriteItemType.BYTE_IO:
                blobs.append((key, cast(io.BytesIO, data).getvalue()))
            else:
                tensors.append((key, cast(torch.Tensor, data).detach()))
            order.append((item, key))
        version = plan_items(self.step, tensors, blobs)
        api.wait()  # an asynchronous save still copying uses the same connection
        client = _client()
        try:
            api._store(client, version, time.perf_counter(), strict=True)
        except (api._Refused, AgentUnavailable) as exc:
            raise api.CheckpointError(f"step {self.step} not saved: {exc}") from None
        where = {t.leaf.fqn: (t.record, t.frame.length) for t in version.tensors}
        where.update({o.leaf.fqn: (o.record, len(o.blob)) for o in version.objects})
        results = []
        for item, key in order:
            off, length = where[key]
            results.append(WriteResult(item.index, length, _StorageInfo(path, off, length)))
        fut: Future[list[WriteResult]] = Future()
        fut.set_result(results)
        return fut

    def finish(self, metadata: Metadata, results: list[list[WriteResult]]) -> None:
        """The coordinator gives its agent the global metadata (persisted with the step)."""
        metadata.storage_data = {r.index: r.storage_data for rs in results for r in rs}
        reply = _client().request(
            "dcp_meta", step=self.step, data=base64.b64encode(pickle.dumps(metadata)).decode()
        )
        if not reply.ok:
            raise api.CheckpointError(
                f"step {self.step}: the agent refused its metadata: {reply.error}"
            )

    def storage_meta(self) -> StorageMeta | None:
        """What DCP records of this save."""
        return StorageMeta(checkpoint_id=f"aegis-step-{self.step}", save_id=self.save_id)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike[str]) -> bool:
        """Never picked by DCP from a path: pass it as `storage_writer`."""
        return False


class AegisStorageReader(StorageReader):
    """A DCP storage reader of the step the job restarts from (memory, else its persisted
    copy)."""

    def __init__(self) -> None:
        super().__init__()
        self.step: int | None = None
        self.source = ""
        self.storage_data: dict[MetadataIndex, _StorageInfo] = {}
        self._fs: FileSystemReader | None = None
        self._files: dict[str, bytes | memoryview] = {}
        self._resolved = False

    def _resolve(self) -> None:
        if self._resolved:
            return
        reply = _client().request("restore")
        if not reply.ok:
            raise api.CheckpointError(f"cannot restore: {reply.error}")
        step = reply.get("step")
        if step is None:
            raise api.CheckpointError("nothing to restore: the job has no checkpoint yet")
        self.step, self.source = int(step), str(reply.get("source"))
        if self.source == "disk":
            self._fs = FileSystemReader(os.path.dirname(str(reply.get("path"))))
        else:
            self._files[self._own_path()] = version_bytes(str(reply.get("path")), int(step))
        self._resolved = True

    def _own_path(self) -> str:
        rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
        return disk.rank_data_path(rank)

    def reset(self, checkpoint_id: str | os.PathLike[str] | None = None) -> None:
        """A new load."""
        self._resolved = False
        self._files.clear()
        self._fs = None

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        """The step's global metadata (memory: the coordinator's agent's, broadcast)."""
        self._resolve()
        if self._fs is not None:
            return self._fs.read_metadata()
        md: list[Metadata | None] = [None]
        if not dist.is_available() or not dist.is_initialized() or dist.get_rank() == 0:
            reply = _client().request("dcp_meta_get", step=self.step)
            md[0] = pickle.loads(base64.b64decode(reply.get("data"))) if reply.ok else None
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            dist.broadcast_object_list(md, src=0)
        if md[0] is None:
            raise api.CheckpointError(f"the global metadata of step {self.step} is not in memory")
        return md[0]

    def set_up_storage_reader(
        self, metadata: Metadata, is_coordinator: bool, *args: Any, **kwargs: Any
    ) -> None:
        """Where each item is."""
        if self._fs is not None:
            self._fs.set_up_storage_reader(metadata, is_coordinator, *args, **kwargs)
        self.storage_data = dict(metadata.storage_data)

    def prepare_local_plan(self, plan: LoadPlan) -> LoadPlan:
        """The plan as DCP made it."""
        return plan

    def prepare_global_plan(self, plans: list[LoadPlan]) -> list[LoadPlan]:
        """The plans as DCP made them."""
        return plans

    def read_data(self, plan: LoadPlan, planner: LoadPlanner) -> Future[None]:
        """Each item from the version that holds it (memory), or from disk."""
        if self._fs is not None:
            return self._fs.read_data(plan, planner)
        for req in plan.items:
            info = self.storage_data[req.storage_index]
            record = self._record(info)
            if req.type == LoadItemType.BYTE_IO:
                planner.load_bytes(req, io.BytesIO(bytes(record)))
                continue
            tensor = torch.load(io.BytesIO(bytes(record)), map_location="cpu", weights_only=True)
            tensor = narrow_tensor_by_index(tensor, req.storage_offsets, req.lengths)
            target = planner.resolve_tensor(req).detach()
            target.copy_(tensor)
            planner.commit_tensor(req, target)
        fut: Future[None] = Future()
        fut.set_result(None)
        return fut

    def _record(self, info: _StorageInfo) -> bytes | memoryview:
        data = self._files.get(info.relative_path)
        if data is None:
            rank = int(info.relative_path.split("/")[0].split("-")[1])
            reply = _client().request("fetch", step=self.step, rank=rank)
            if not reply.ok:
                raise api.CheckpointError(
                    f"step {self.step}: {info.relative_path} is not on this node ({reply.error}); "
                    "restore from the persisted copy"
                )
            data = version_bytes(str(reply.get("path")), self.step or 0)
            self._files[info.relative_path] = data
        return data[info.offset : info.offset + info.length]

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike[str]) -> bool:
        """Never picked by DCP from a path: pass it as `storage_reader`."""
        return False


__all__ = ["AegisStorageReader", "AegisStorageWriter"]
