"""bench/restart_vs_torchrun.py: what counts as a recovery, and the figures it reads."""

from __future__ import annotations

import os

import pytest

from ..support.bench import load_bench

bench = load_bench("restart_vs_torchrun")

# rank 1 crashes at 10.0; rank 0's first attempt says "start" just after the crash
RECOVERED = """start 1 9.9
start 0 10.01
crash 1 10.0
start 1 10.2
start 0 10.3
pg 1 11.4
pg 0 11.5
"""


# torchrun's static rendezvous: rank 0's first attempt joined the relaunched rank 1
NOT_RELAUNCHED = RECOVERED.replace("start 0 10.3\n", "").replace("start 0 10.01", "start 0 9.9")


def test_a_recovery_is_read_from_the_times_file() -> None:
    t = bench.parse_times(RECOVERED, 2)
    assert (t.relaunch, t.pg_ready, t.spawn_to_pg) == pytest.approx((0.3, 1.5, 1.2))


def test_process_groups_before_a_mid_training_crash_are_the_first_attempts() -> None:
    mid = "start 0 8.0\nstart 1 8.0\npg 0 9.0\npg 1 9.1\n" + RECOVERED.replace("start 1 9.9\n", "")
    t = bench.parse_times(mid.replace("start 0 10.01\n", ""), 2)
    assert (t.relaunch, t.pg_ready, t.spawn_to_pg) == pytest.approx((0.3, 1.5, 1.2))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (RECOVERED.replace("crash 1 10.0\n", ""), "0 crashes"),
        (RECOVERED + "crash 0 12.0\n", "2 crashes"),
        (RECOVERED.replace("pg 0 11.5\n", ""), "rank 0: process groups at"),
        (RECOVERED + "pg 0 13.0\n", "rank 0: process groups at"),
        (NOT_RELAUNCHED, "rank 0 was not relaunched"),
        (RECOVERED + "start 1 12.0\n", "rank 1 started again"),
    ],
)
def test_anything_but_one_relaunch_of_every_rank_is_not_a_recovery(text: str, why: str) -> None:
    with pytest.raises(bench.NotRecovered, match=why):
        bench.parse_times(text, 2)


def test_layouts_and_the_table() -> None:
    assert (bench.Layout.parse("2x4").world, bench.Layout.parse("2x4").crash_rank) == (8, 5)
    assert str(bench.Layout.parse("4")) == "4" and bench.Layout.parse("1x2").crash_rank == 1
    with pytest.raises(ValueError):
        bench.Layout.parse("1")
    a, t = bench.Results(), bench.Results()
    a.times += [bench.Times(0.1, 1.0, 0.9), bench.Times(0.3, 1.2, 0.9)]
    a.failures.append("NotRecovered: x")
    t.times.append(bench.Times(0.4, 1.6, 1.2))
    rows = bench.table(bench.Layout.parse("2"), {"aegis": a, "torchrun": t})
    assert "2/3" in rows[0] and "1.100 (1.00-1.20)" in rows[0]
    assert "1/1" in rows[1]
    assert rows[2].split()[1:] == ["0.50", "0.69", "0.75"]  # aegis/torchrun per measure
    w = bench.Results()
    w.times.append(bench.Times(0.2, 0.8, 0.6))
    rows = bench.table(bench.Layout.parse("2"), {"aegis": a, "aegis-standby": w, "torchrun": t})
    assert [r.split()[0] for r in rows[3:]] == ["aegis/torchrun", "aegis-standby/torchrun"]
    assert rows[4].split()[1:] == ["0.50", "0.50", "0.50"]


def test_peers_apply_to_the_layout_in_a_fixed_order() -> None:
    two, one_node = bench.Layout.parse("2"), bench.Layout.parse("1x4")
    assert bench.peers_of(two) == ["torchrun", "torchrun-nodes"]
    assert bench.peers_of(two, ["torchrun-nodes", "torchrun"]) == ["torchrun", "torchrun-nodes"]
    assert bench.peers_of(two, ["torchrun"]) == ["torchrun"]
    assert bench.peers_of(one_node, ["torchrun-nodes"]) == []


def test_descendants_in_sessions_of_their_own_are_found() -> None:
    """A hung torchrun's workers left their group: the bench kills them by lineage."""
    import subprocess
    import sys

    code = (
        "import subprocess, sys, time; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], "
        "start_new_session=True); print(p.pid, flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert bench.descendants(parent.pid) == [child]
    finally:
        for pid in bench.descendants(parent.pid):
            os.kill(pid, 9)
        parent.kill()
        parent.wait()


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
def test_bad_numbers_are_refused_before_any_run(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench.main(["2", *args])
    assert exit_.value.code == 2 and says in capsys.readouterr().err
