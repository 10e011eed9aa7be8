"""bench/multihost_vs_torchrun.py run as a program: one round on three namespaced hosts, both
peers recovered and timed (slow: root and a minute or more); bad numbers refused at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / "multihost_vs_torchrun.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.mark.parametrize("args", [["--rounds", "0"], ["--nproc", "0"]])
def test_bad_numbers_are_refused_before_any_host_is_made(args: list[str]) -> None:
    done = _bench(*args, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "--rounds and --nproc must be at least 1" in done.stderr
    assert done.stdout == ""


@pytest.mark.slow  # three namespaced hosts, aegis run and torchrun each once
@pytest.mark.timeout(900)
def test_one_round_recovers_both_peers_and_prints_their_ratio() -> None:
    done = _bench("--rounds", "1", "--run-timeout", "300", timeout=880)
    if done.returncode == 2 and "cannot make namespaced hosts" in done.stderr:
        pytest.skip(done.stderr.strip())
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines() if line.strip()}
    for kind in ("aegis", "torchrun"):
        assert rows[kind][1] == "1/1", done.stdout  # recovered, relaunch s, pg-ready s
        relaunch, pg_ready = float(rows[kind][2]), float(rows[kind][3])
        assert 0 < relaunch <= pg_ready, done.stdout
    assert "ratio" in rows and "did not recover" not in done.stdout
