"""Bootcheck environment: what each worker runs, and the multi-version comparison across workers."""

from __future__ import annotations

import platform
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aegis.checks.params import CheckParams
from aegis.checks.result import CheckResult, CheckType, failed, passed

VERSION_KEYS: tuple[str, ...] = ("torch", "cuda", "nccl", "cudnn")


@dataclass(frozen=True)
class Finding:
    """Workers disagree on `key`: `values` maps each rendered value to the worker indices."""

    kind: str  # "multi-version"
    key: str
    values: Mapping[str, tuple[int, ...]]

    def message(self) -> str:
        """A one-line summary for the bootcheck log."""
        parts = ", ".join(f"{v} on workers {list(ws)}" for v, ws in sorted(self.values.items()))
        return f"{self.kind}: {self.key} differs across workers ({parts})"


def collect_environment() -> dict[str, Any]:
    """torch, CUDA, NCCL and cuDNN versions and the visible devices (None where absent)."""
    import torch

    cuda = torch.cuda.is_available()
    count = torch.cuda.device_count() if cuda else 0
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": _nccl_version() if cuda else None,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "cuda_available": cuda,
        "device_count": count,
        "device_names": [torch.cuda.get_device_name(i) for i in range(count)],
        "python": platform.python_version(),
        "hostname": platform.node(),
    }


def check_env(params: CheckParams) -> CheckResult:
    """Collect this worker's environment; fails only when it cannot be collected."""
    t0 = time.monotonic()
    try:
        env = collect_environment()
    except Exception as exc:
        return failed(CheckType.ENV, f"environment unreadable: {type(exc).__name__}: {exc}", t0)
    summary = f"torch {env['torch']}, CUDA {env['cuda']}, {env['device_count']} GPU(s)"
    return passed(CheckType.ENV, summary, t0, **env)


def compare_environments(envs: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """One "multi-version" finding per version key on which the workers differ."""
    findings = []
    for key in VERSION_KEYS:
        values: dict[str, list[int]] = {}
        for i, env in enumerate(envs):
            values.setdefault(str(env.get(key)), []).append(i)
        if len(values) > 1:
            findings.append(Finding("multi-version", key, {v: tuple(w) for v, w in values.items()}))
    return findings


def _nccl_version() -> str | None:
    import torch

    try:
        v = torch.cuda.nccl.version()
    except Exception:
        return None
    return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
