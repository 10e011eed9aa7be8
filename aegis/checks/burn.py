"""burn: an operator-only compute stress on this worker's device (never in an automatic round).

Square float32 matmuls on the worker's GPU (`params.device_index`) when CUDA is usable, else
on the CPU with the worker's threads (one: the worker never competes with training for cores),
for `params.burn_seconds`, cut short so that it ends inside its budget. The result is the
achieved GFLOP/s. It fails when the device raises (a lost card, an illegal access, the
simulated `gpu_lost` / `runtime_error`) or computes wrong numbers: every product is of the
same two matrices, so the last must match the first and be finite.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from aegis.checks.params import CheckParams
from aegis.checks.result import CheckResult, CheckType, failed, passed

CPU_SIZE = 512
GPU_SIZE = 4096
GPU_BATCH = 8  # matmuls queued between synchronisations (a CPU matmul is synchronous)
MARGIN_S = 5.0  # the most of an explicit budget kept back for setup and the last iteration


def burn_seconds(params: CheckParams) -> float:
    """How long the burn runs: `burn_seconds`, cut so that it ends inside its budget."""
    budget = params.budget(CheckType.BURN)
    return max(min(params.burn_seconds, budget - min(MARGIN_S, budget / 4)), 0.0)


def check_burn(params: CheckParams) -> CheckResult:
    """Run the stress; pass with the achieved GFLOP/s, fail on a device error or wrong result."""
    t0 = time.monotonic()
    seconds = burn_seconds(params)
    details: dict[str, Any] = {"requested_s": params.burn_seconds, "seconds": round(seconds, 3)}
    try:
        cuda = torch.cuda.is_available()
        dev = torch.device("cuda", params.device_index) if cuda else torch.device("cpu")
        details["device"] = torch.cuda.get_device_name(dev) if cuda else "cpu"
        details["threads"] = None if cuda else torch.get_num_threads()
        _raise_simulated(params)
        n = params.burn_size or (GPU_SIZE if cuda else CPU_SIZE)
        details["size"] = n
        iters, elapsed, consistent = _stress(dev, n, seconds)
    except Exception as exc:
        where = details.get("device", "the device")
        return failed(
            CheckType.BURN, f"device error during burn on {where}: {_short(exc)}", t0, **details
        )
    gflops = 2.0 * n**3 * iters / max(elapsed, 1e-9) / 1e9
    details.update(iters=iters, elapsed_s=round(elapsed, 4), gflops=round(gflops, 3))
    if not consistent:
        return failed(
            CheckType.BURN,
            f"wrong results on {details['device']}: the same product differed or was not finite",
            t0,
            **details,
        )
    cut = ""
    if seconds < params.burn_seconds:
        cut = f" (cut from {params.burn_seconds:g} s by its budget)"
    return passed(
        CheckType.BURN,
        f"{gflops:.1f} GFLOP/s: {iters} matmuls of {n}x{n} in {elapsed:.2f} s on "
        f"{details['device']}{cut}",
        t0,
        **details,
    )


def _raise_simulated(params: CheckParams) -> None:
    """The device or runtime error a test asks the burn to simulate."""
    if params.simulates("gpu_lost"):
        raise RuntimeError("simulated device error (gpu_lost)")
    if params.simulates("runtime_error"):
        raise RuntimeError("simulated runtime error (runtime_error)")


def _stress(dev: torch.device, n: int, seconds: float) -> tuple[int, float, bool]:
    """(matmuls done, seconds they took, whether the last product equals the first)."""
    gen = torch.Generator(device=dev).manual_seed(0)
    scale = n**-0.5
    a = torch.randn(n, n, device=dev, generator=gen) * scale
    b = torch.randn(n, n, device=dev, generator=gen) * scale
    first = torch.mm(a, b)
    out = torch.empty_like(first)
    batch = GPU_BATCH if dev.type == "cuda" else 1
    _sync(dev)
    start = time.perf_counter()
    end = start + seconds
    iters = 0
    while True:
        for _ in range(batch):
            torch.mm(a, b, out=out)
        iters += batch
        _sync(dev)
        if time.perf_counter() >= end:
            break
    elapsed = time.perf_counter() - start
    ok = bool(torch.isfinite(out).all()) and bool(torch.allclose(out, first, rtol=1e-4, atol=1e-5))
    return iters, elapsed, ok


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _short(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0][:300] if lines else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
