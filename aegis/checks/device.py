"""Device checks: gpu (NVML when nvidia-ml-py is importable, else torch.cuda) and runtime."""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

from aegis.checks.params import CheckParams
from aegis.checks.result import CheckResult, CheckType, failed, not_applicable, passed


def check_gpu(params: CheckParams) -> CheckResult:
    """GPU health: every expected card present, no uncorrected ECC errors, not too hot."""
    t0 = time.monotonic()
    if params.simulates("gpu_lost"):
        return failed(CheckType.GPU, "GPU lost (simulated gpu_lost)", t0, simulated=True)
    nvml = _nvml()
    if nvml is not None:
        return _gpu_by_nvml(nvml, params, t0)
    import torch

    if torch.cuda.is_available():
        return _gpu_by_torch(params, t0)
    if params.expected_gpus:
        return failed(CheckType.GPU, f"no GPU visible, {params.expected_gpus} expected", t0)
    return not_applicable(CheckType.GPU, "no GPU on this node (NVML and CUDA unavailable)", t0)


def check_runtime(params: CheckParams) -> CheckResult:
    """CUDA driver/runtime usable on this worker's device, or the CPU runtime without CUDA."""
    t0 = time.monotonic()
    try:
        if params.simulates("runtime_error"):
            raise RuntimeError("simulated runtime error (runtime_error)")
        import torch

        if torch.cuda.is_available():
            dev = torch.device("cuda", params.device_index)
            ok = float((torch.ones(16, device=dev) * 2).sum().item()) == 32.0
            torch.cuda.synchronize(dev)
            where = f"CUDA {torch.version.cuda} on {torch.cuda.get_device_name(dev)}"
        else:
            ok = float((torch.ones(16) * 2).sum().item()) == 32.0
            where = "CPU runtime (no CUDA)"
    except Exception as exc:
        return failed(CheckType.RUNTIME, f"runtime unusable: {type(exc).__name__}: {exc}", t0)
    if not ok:
        return failed(CheckType.RUNTIME, f"a tiny tensor op gave a wrong value on the {where}", t0)
    return passed(CheckType.RUNTIME, f"tensor op ok: {where}", t0)


def _nvml() -> ModuleType | None:
    """pynvml (from nvidia-ml-py) initialised, or None when the module or driver is missing."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    return pynvml


def _gpu_by_nvml(nvml: Any, params: CheckParams, t0: float) -> CheckResult:
    try:
        count = int(nvml.nvmlDeviceGetCount())
        devices, problems = [], []
        for i in range(count):
            info, problem = _nvml_device(nvml, i, params.gpu_temp_limit_c)
            devices.append(info)
            if problem:
                problems.append(problem)
    except Exception as exc:
        return failed(CheckType.GPU, f"NVML query failed: {exc}", t0)
    finally:
        _quietly(nvml.nvmlShutdown)
    return _verdict(count, devices, problems, params, t0, source="nvml")


def _nvml_device(nvml: Any, i: int, temp_limit: float) -> tuple[dict[str, Any], str | None]:
    try:
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        name = nvml.nvmlDeviceGetName(h)
        name = name.decode() if isinstance(name, bytes) else str(name)
        temp = int(nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU))
    except Exception as exc:  # NVMLError_GpuIsLost and friends
        return {"index": i, "error": str(exc)}, f"GPU {i} lost or unreadable: {exc}"
    ecc = _quietly(
        lambda: int(
            nvml.nvmlDeviceGetTotalEccErrors(
                h, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC
            )
        )
    )
    info = {"index": i, "name": name, "temperature_c": temp, "ecc_uncorrected": ecc}
    if ecc:
        return info, f"GPU {i} has {ecc} uncorrected ECC error(s)"
    if temp >= temp_limit:
        return info, f"GPU {i} at {temp} C (limit {temp_limit:g} C)"
    return info, None


def _gpu_by_torch(params: CheckParams, t0: float) -> CheckResult:
    import torch

    count = torch.cuda.device_count()
    devices, problems = [], []
    for i in range(count):
        try:
            devices.append({"index": i, "name": torch.cuda.get_device_name(i)})
        except Exception as exc:
            devices.append({"index": i, "error": str(exc)})
            problems.append(f"GPU {i} unreadable: {exc}")
    return _verdict(count, devices, problems, params, t0, source="torch.cuda (no NVML)")


def _verdict(
    count: int,
    devices: list[dict[str, Any]],
    problems: list[str],
    params: CheckParams,
    t0: float,
    source: str,
) -> CheckResult:
    expected = params.expected_gpus
    if expected is not None and count < expected:
        problems.insert(0, f"only {count} of {expected} GPUs visible (card lost)")
    details = {"count": count, "devices": devices, "source": source}
    if problems:
        return failed(CheckType.GPU, "; ".join(problems), t0, **details)
    if count == 0:
        return not_applicable(CheckType.GPU, "no GPU on this node", t0, **details)
    return passed(CheckType.GPU, f"{count} GPU(s) healthy ({source})", t0, **details)


def _quietly(fn: Any) -> Any:
    try:
        return fn()
    except Exception:
        return None
