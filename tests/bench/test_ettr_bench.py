"""bench/ettr.py's arithmetic, run as a program on a synthetic job log (what the figures mean;
the bench itself runs three launchers for many minutes and is run by hand: docs/checkpoints.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH = str(ROOT / "bench" / "ettr.py")


def bench(*argv: str) -> Any:
    """The JSON bench/ettr.py prints for `argv`."""
    done = subprocess.run(
        [sys.executable, BENCH, *argv], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout)


def test_the_fault_schedule_is_seeded_exponential_and_bounded() -> None:
    args = ["--schedule", "--mean-interval", "30", "--kinds", "crash,hang", "--nproc", "2"]
    a = bench(*args, "--seed", "7")
    assert a == bench(*args, "--seed", "7")  # the same for every launcher
    assert a != bench(*args, "--seed", "8")
    assert all(0 < f["at"] <= 600 for f in a) and [f["at"] for f in a] == sorted(f["at"] for f in a)
    assert 8 <= len(a) <= 40  # ~20 faults at a mean of 30 s over 600 s
    assert {f["kind"] for f in a} <= {"crash", "hang"} and {f["rank"] for f in a} <= {0, 1}


def _kept_run(
    work: Path, ff_wall: float, ff_step: float, slow_step: int | None = None, slow_dt: float = 1.0
) -> Path:
    """A run of 10 steps of 1 s (step `slow_step` `slow_dt` s), each blocked 0.01 s by its save:
    steps 0..5, a crash at 6.5 s, the ranks start again at 8.5 s, a restore of step 4, steps
    5..9."""
    events: list[dict[str, Any]] = [{"e": "start", "rank": 0, "t": 0.0}]
    for step in range(6):
        events.append(
            {
                "e": "step",
                "rank": 0,
                "step": step,
                "t": 1.0 + step,
                "dt": 1.0,
                "compute": 0.9,
                "save_s": 0.01,
                "persisting": step == 4,
            }
        )
    events.append({"e": "start", "rank": 0, "t": 8.5})
    events.append({"e": "restored", "rank": 0, "step": 4, "source": "memory", "s": 0.002, "t": 9.0})
    for step in range(5, 10):
        events.append(
            {
                "e": "step",
                "rank": 0,
                "step": step,
                "t": 9.5 + step,
                "dt": slow_dt if step == slow_step else 1.0,
                "compute": 0.9,
                "save_s": 0.01,
                "persisting": False,
            }
        )
    events.append({"e": "done", "rank": 0, "t": 20.0})
    work.mkdir(exist_ok=True)
    (work / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    run = {
        "name": "aegis+checkpoint",
        "wall": 20.0,
        "finished": True,
        "ff_wall": ff_wall,
        "ff_step": ff_step,
        "ff_productive": 10 * (ff_step - 0.01),
        "applied": [[6.5, 6.5, "crash", 1]],
    }
    (work / "run.json").write_text(json.dumps(run))
    return work


def test_the_figures_of_a_job_with_one_crash(tmp_path: Path) -> None:
    # the fault-free run took 16 s (6 s outside its steps); this one 20 s
    got = bench("--summarize", str(_kept_run(tmp_path / "a", ff_wall=16.0, ff_step=1.0)))
    assert got["ettr"] == 0.8 and got["lost_per_fault_s"] == 4.0 and got["ettr_raw"] == 0.8
    assert got["recomputed_per_fault"] == 1.0  # step 5 done twice
    assert got["recomputed_by_kind"] == {"crash": [1]}
    assert got["restore_s"] == {"memory": {"n": 1, "median": 0.002, "mean": 0.002}}
    assert got["recovered"] == "1/1" and got["faults_by_kind"]["crash"] == 1
    assert got["training_again_s"] == {"crash": [8.0]}  # the crash at 6.5, step 5 at 14.5


def test_a_slow_step_trains_but_is_lost_at_the_median_pace(tmp_path: Path) -> None:
    # step 7 took 3 s instead of 1 (a slow rank): it trained, so ETTR does not count it lost;
    # the stricter `ettr_pace` counts the 2 s beyond the median step as lost too
    work = _kept_run(tmp_path / "c", ff_wall=16.0, ff_step=1.0, slow_step=7, slow_dt=3.0)
    run = json.loads((work / "run.json").read_text())
    (work / "run.json").write_text(json.dumps({**run, "wall": 22.0}))
    got = bench("--summarize", str(work))
    assert got["lost_per_fault_s"] == 4.0 and got["ettr"] == round(18 / 22, 3)
    assert got["lost_per_fault_pace_s"] == 6.0 and got["ettr_pace"] == round(16 / 22, 3)


def test_a_slower_fault_free_run_is_not_counted_as_time_lost(tmp_path: Path) -> None:
    # a machine twice as loaded during the fault-free run: its slower steps are not a fault's
    slow = bench("--summarize", str(_kept_run(tmp_path / "b", ff_wall=26.0, ff_step=2.0)))
    assert slow["lost_per_fault_s"] == 4.0 and slow["ettr_raw"] == 1.3
    assert slow["lost_per_fault_pace_s"] == 4.0


def test_a_line_a_rank_is_still_writing_is_not_read(tmp_path: Path) -> None:
    work = _kept_run(tmp_path / "d", ff_wall=16.0, ff_step=1.0)
    whole = bench("--summarize", str(work))
    with (work / "events.jsonl").open("a") as f:
        f.write('{"e": "step", "rank": 0, "st')  # the bench reads while a rank writes
    assert bench("--summarize", str(work)) == whole
