"""Checkpoints kept by the node agent: `save(state_dict, step)` and `load()` for training code,
and `AegisStorageWriter` / `AegisStorageReader` for `torch.distributed.checkpoint`.

    import aegis.checkpoint

    restored = aegis.checkpoint.load()  # None on a fresh job
    if restored is not None:
        model.load_state_dict(restored.state["model"])
        optimizer.load_state_dict(restored.state["optimizer"])
    for step in range(restored.step + 1 if restored else 0, steps):
        ...
        aegis.checkpoint.save({"model": model.state_dict(),
                               "optimizer": optimizer.state_dict()}, step)

docs/checkpoints.md describes where the state lives, when it is persisted, and what a save
costs. The submodules `wire` and `disk` need no torch (the agent uses them); the rest is
imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aegis.checkpoint.api import (
        CheckpointError,
        Restored,
        SaveResult,
        available,
        load,
        save,
        wait,
    )
    from aegis.checkpoint.dcp_storage import AegisStorageReader, AegisStorageWriter

__all__ = [
    "AegisStorageReader",
    "AegisStorageWriter",
    "CheckpointError",
    "Restored",
    "SaveResult",
    "available",
    "load",
    "save",
    "wait",
]

_API = {"CheckpointError", "Restored", "SaveResult", "available", "load", "save", "wait"}
_DCP = {"AegisStorageReader", "AegisStorageWriter"}


def __getattr__(name: str) -> Any:
    if name in _API:
        from aegis.checkpoint import api

        return getattr(api, name)
    if name in _DCP:
        from aegis.checkpoint import dcp_storage

        return getattr(dcp_storage, name)
    raise AttributeError(f"module 'aegis.checkpoint' has no attribute {name!r}")
