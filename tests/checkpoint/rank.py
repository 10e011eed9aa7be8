"""A rank for the checkpoint tests: runs the actions named on its command line, prints one JSON
line per action (python -m tests.checkpoint.rank ACTION[:ARG]...).

  save:S          save the reference state of step S (values depend on S)
  grown:S         save it with one more tensor of 1 MB
  crash:P:S[:strict]  save step S (strict: through `begin`, not the file the last commit
                  reserved) and exit at once (os._exit) at point P of the save
  bad:S           save step S with an unpicklable value in the state
  load            load() and check the state against the reference state of its step
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

import torch

import aegis.checkpoint as ckpt
from aegis.checkpoint import api


def state(step: int) -> dict[str, Any]:
    """The reference state of `step`: a model, an optimizer's state, plain values."""
    g = torch.Generator().manual_seed(step)
    return {
        "model": {"w": torch.randn(64, 32, generator=g), "b": torch.full((32,), float(step))},
        "optim": {
            "state": {
                0: {"step": torch.tensor(float(step)), "exp_avg": torch.randn(7, generator=g)}
            },
            "param_groups": [{"lr": 0.1, "betas": (0.9, 0.99), "params": [0]}],
        },
        "step": step,
        "half": torch.arange(6, dtype=torch.bfloat16).view(2, 3) + step,
        "flags": torch.tensor([True, False]),
        "empty": {},
        "noncontig": torch.arange(12.0).view(3, 4).t() + step,
    }


def same(a: object, b: object) -> bool:
    """Deep equality of two states (tensors by dtype, shape and values)."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return a == b


def out(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def main(actions: list[str]) -> None:
    for action in actions:
        kind, *args = action.split(":")
        if kind in ("save", "grown"):
            sd = state(int(args[0]))
            if kind == "grown":  # larger than the file the last commit reserved
                sd["extra"] = torch.zeros(1 << 18)
            r = ckpt.save(sd, int(args[0]))
            out(action=kind, ok=r.ok, where=r.where, error=r.error, persisting=r.persisting)
        elif kind == "crash":
            point, step = args[0], int(args[1])

            def crash(at: str, point: str = point) -> None:
                if at == point:
                    os._exit(17)

            api.PROBE = crash
            ckpt.save(state(step), step, strict=args[2:] == ["strict"])
            out(action=kind, survived=True)
        elif kind in ("asave", "asave-torn"):
            step = int(args[0])
            sd = state(step)
            if kind == "asave-torn":  # the training writes a saved tensor during the copy

                def write(at: str, sd: dict[str, Any] = sd) -> None:
                    if at == "tensors-half":
                        sd["model"]["w"].add_(1)

                api.PROBE = write
            r = ckpt.save(sd, step, asynchronous=True)
            done = ckpt.wait()
            api.PROBE = None
            assert done is not None
            out(action=kind, pending=r.pending, ok=done.ok, error=done.error, blocked=r.seconds)
        elif kind == "bad":
            sd = {**state(int(args[0])), "lock": threading.Lock()}
            r = ckpt.save(sd, int(args[0]))
            out(action=kind, ok=r.ok, error=r.error)
        elif kind == "load":
            got = ckpt.load()
            if got is None:
                out(action=kind, step=None)
            else:
                out(
                    action=kind,
                    step=got.step,
                    source=got.source,
                    equal=same(got.state, state(got.step)),
                )
        else:
            raise SystemExit(f"unknown action {action}")


if __name__ == "__main__":
    main(sys.argv[1:])
