"""`dcp.save(storage_writer=AegisStorageWriter(step))` / `dcp.load(storage_reader=
AegisStorageReader())` with a sharded (DTensor) state dict on two gloo ranks: into the agent's
memory, back from it, and persisted as one DCP checkpoint that `dcp.load` reads without Aegis."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp

from aegis.checkpoint import disk

from ..support.ckpt import StoreThread

ROOT = Path(__file__).resolve().parents[2]


def pair(store: StoreThread, action: str) -> list[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    envs = store.env()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.checkpoint.dcp_rank", action, str(r), port],
            env={**os.environ, **envs[r], "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in (0, 1)
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        outs.append(out.strip())
    return outs


def test_a_sharded_save_round_trips_through_memory_and_disk(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    store = StoreThread(ranks=(0, 1), world=2, checkpoint_dir=str(root), every=1)
    try:
        assert pair(store, "save") == ["saved", "saved"]
        store.settle()
        assert store.call(store.store.held) == [3]
        store.call(store.store.restore_from, (3, "memory"))
        assert pair(store, "load") == ["loaded True", "loaded True"]
    finally:
        store.close()
    assert disk.is_complete(root, 3, 2)
    full: dict[str, Any] = {"w": torch.zeros(8, 3), "r": torch.zeros(5), "meta": {"step": 0}}
    dcp.load(full, checkpoint_id=disk.step_dir(root, 3), no_dist=True)
    assert torch.equal(full["w"], torch.arange(24, dtype=torch.float32).view(8, 3))
    assert torch.equal(full["r"], torch.ones(5) * 7) and full["meta"] == {"step": 3}
