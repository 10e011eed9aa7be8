"""Node-local checks without torch: io, rdma (a fake sysfs tree) and their simulated faults."""

from __future__ import annotations

from pathlib import Path

from aegis.checks.local import check_io, check_rdma
from aegis.checks.params import CheckParams


def test_io_writes_reads_and_cleans_up(tmp_path: Path) -> None:
    r = check_io(CheckParams(io_dir=str(tmp_path), io_bytes=4096))
    assert r.passed and r.details["bytes"] == 4096
    assert list(tmp_path.iterdir()) == []


def test_io_failures(tmp_path: Path) -> None:
    missing = check_io(CheckParams(io_dir=str(tmp_path / "nope")))
    assert missing.failed and "nope" in missing.result
    simulated = check_io(CheckParams(io_dir=str(tmp_path), simulate=("io_error",)))
    assert simulated.failed and "simulated" in simulated.result


def sysfs(root: Path, states: dict[str, str]) -> str:
    """A fake /sys/class/infiniband with one port per device."""
    for dev, state in states.items():
        port = root / dev / "ports" / "1"
        port.mkdir(parents=True)
        (port / "state").write_text(f"{state}\n")
    return str(root)


def test_rdma_ports(tmp_path: Path) -> None:
    up = sysfs(tmp_path / "up", {"mlx5_0": "4: ACTIVE", "mlx5_1": "4: ACTIVE"})
    assert check_rdma(CheckParams(rdma_root=up)).passed
    down = check_rdma(CheckParams(rdma_root=sysfs(tmp_path / "down", {"mlx5_0": "1: DOWN"})))
    assert down.failed and "mlx5_0/1" in down.result
    assert check_rdma(CheckParams(rdma_root=up, simulate=("rdma_down",))).failed
    none = check_rdma(CheckParams(rdma_root=str(tmp_path / "absent")))
    assert none.passed and not none.applicable
