"""bench/restart_vs_torchrun.py run as a program on a crash-once script of its own (no torch in
the ranks): a recovery is counted with its figures, a run without one is said not to recover,
and bad numbers are refused before any run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The bench's script contract (as examples/train_ddp.py): note "start", "crash" and "pg" lines
# in TIMES_FILE; rank CRASH_ONCE_RANK exits 1 on its first attempt (a marker in CRASH_DIR).
# The other rank's first attempt waits to be stopped by the recovery; every second attempt
# "joins its process group" and ends.
SCRIPT = """
import os, sys, time
from pathlib import Path

rank = int(os.environ["RANK"])

def note(kind):
    with open(os.environ["TIMES_FILE"], "a") as f:
        f.write(f"{kind} {rank} {time.time()}\\n")

note("start")
first = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
marker = Path(os.environ["CRASH_DIR"]) / "crashed"
if first and CRASHES and rank == int(os.environ["CRASH_ONCE_RANK"]) and not marker.exists():
    marker.touch()
    note("crash")
    sys.exit(1)
if first and CRASHES:
    time.sleep(60)
note("pg")
"""


def _bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / "restart_vs_torchrun.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def _script(tmp_path: Path, crashes: bool) -> str:
    path = tmp_path / "crash_once.py"
    path.write_text(SCRIPT.replace("CRASHES", str(crashes)))
    return str(path)


def _row(stdout: str, kind: str) -> list[str]:
    """The table's row of `kind` (a layout's rows start with it; the ratio rows do not)."""
    return next(row for line in stdout.splitlines() if kind in (row := line.split())[:2])


@pytest.mark.timeout(300)
def test_a_recovery_under_aegis_is_counted_with_its_figures(tmp_path: Path) -> None:
    done = _bench("2", "--rounds", "1", "--peers", "torchrun", "--aegis", "cold",
                  "--script", _script(tmp_path, crashes=True), "--run-timeout", "120")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    for kind in ("aegis", "torchrun"):  # the peer, measured in the same run
        row = _row(done.stdout, kind)
        assert row[0] == "2" and row[2] == "1/1", done.stdout
        # relaunch s, then pg-ready s: each the median of the one run, the relaunch first
        relaunch, pg_ready = float(row[3]), float(row[5])
        assert 0 < relaunch <= pg_ready, done.stdout
    assert _row(done.stdout, "aegis/torchrun")  # the ratios
    assert "did not recover" not in done.stdout


@pytest.mark.slow  # a minute of aegis run and torchrun: the recovery above runs in CI
@pytest.mark.timeout(300)
def test_a_run_without_a_crash_is_not_a_recovery(tmp_path: Path) -> None:
    done = _bench("2", "--rounds", "1", "--aegis", "cold", "--peers", "torchrun",
                  "--script", _script(tmp_path, crashes=False), "--run-timeout", "120")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert _row(done.stdout, "aegis")[2] == "0/1", done.stdout
    assert "aegis did not recover: NotRecovered: 0 crashes recorded, expected 1" in done.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--run-timeout", "0"], "--run-timeout must be"),
        (["--run-timeout", "nan"], "--run-timeout must be"),
        (["--crash-after", "-1"], "--crash-after must be in 0..300"),
        (["--run-timeout", "60", "--crash-after", "60"], "--crash-after must be in 0..60"),
        (["--rounds", "0"], "--rounds must be at least 1"),
    ],
)
def test_bad_numbers_are_refused_before_any_run(args: list[str], says: str) -> None:
    done = _bench("2", *args, timeout=60)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert done.stdout == ""
