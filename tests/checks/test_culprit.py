"""The hang culprit finder against real processes: stopped, outside a collective, and waiting
in a gloo all_reduce behind a peer that never joins it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from aegis.checks.culprit import GONE, OUTSIDE, STOPPED, UNKNOWN, WAITING, look, py_spy, verdict_of
from tests.support.wait import wait_for

SLEEPER = "import time\ndef user_loop():\n    while True: time.sleep(0.05)\nuser_loop()\n"


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()


def spawn(started: list[subprocess.Popen[bytes]], code: str, **env: str) -> subprocess.Popen[bytes]:
    p = subprocess.Popen(
        [sys.executable, "-c", code], env={**os.environ, **env}, start_new_session=True
    )
    started.append(p)
    return p


def test_verdicts() -> None:
    assert verdict_of("T", "") == STOPPED
    assert verdict_of("t", "x (y.py:1)") == STOPPED
    assert verdict_of("", "") == GONE and verdict_of("Z", "") == GONE
    assert verdict_of("S", "") == UNKNOWN
    assert verdict_of("S", "all_reduce (torch/distributed/distributed_c10d.py:3)") == WAITING
    assert verdict_of("S", "_engine_run_backward (torch/autograd/graph.py:9)") == WAITING
    assert verdict_of("R", "user_loop (train.py:3)\n<module> (train.py:4)") == OUTSIDE


def test_a_stopped_rank_is_the_culprit(procs: list[subprocess.Popen[bytes]]) -> None:
    p = spawn(procs, SLEEPER)
    os.kill(p.pid, signal.SIGSTOP)
    (got,) = look([(0, p.pid, "")], sample_s=0.1)
    assert got.verdict == STOPPED and got.culprit and "SIGSTOP" in got.describe()


@pytest.mark.skipif(py_spy() is None, reason="py-spy is not installed")
def test_a_rank_outside_a_collective_is_the_culprit_per_py_spy(
    procs: list[subprocess.Popen[bytes]],
) -> None:
    p = spawn(procs, SLEEPER)
    got = wait_for(  # once it runs its loop (not while it starts)
        lambda: next(
            (x for x in look([(0, p.pid, "")], sample_s=0.1) if "user_loop" in x.stack), None
        ),
        30,
        "a stack sample in user_loop",
    )
    assert got.verdict == OUTSIDE and got.source == "py-spy" and "user_loop" in got.stack


def test_without_py_spy_the_faulthandler_dump_gives_the_stack(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    dump = tmp_path / "stack.txt"
    code = "from aegis.checks import stackdump\nstackdump.register()\n" + SLEEPER
    p = spawn(procs, code, AEGIS_STACK_FILE=str(dump))
    wait_for(lambda: Path(f"{dump}.ready").exists(), 30, "the dump's registration")
    (got,) = look([(0, p.pid, str(dump))], sample_s=0.1, program="")
    assert got.source == "faulthandler" and got.verdict == OUTSIDE and "user_loop" in got.stack
    assert p.poll() is None  # the signal did not end it


def test_an_unregistered_rank_is_never_signalled(procs: list[subprocess.Popen[bytes]]) -> None:
    p = spawn(procs, SLEEPER)
    (got,) = look([(0, p.pid, "/nonexistent/stack.txt")], sample_s=0.1, program="")
    assert got.verdict == UNKNOWN and not got.culprit and p.poll() is None


PAIR = textwrap.dedent(
    """
    import os, time, torch, torch.distributed as dist
    dist.init_process_group("gloo", rank=int(os.environ["R"]), world_size=2,
                            init_method="tcp://127.0.0.1:" + os.environ["PORT"])
    open(os.environ["READY"] + os.environ["R"], "w").close()
    def user_code():
        while True: time.sleep(0.05)
    if os.environ["R"] == "1":
        user_code()  # never joins the all_reduce
    dist.all_reduce(torch.ones(4))
    """
)


@pytest.mark.skipif(py_spy() is None, reason="py-spy is not installed")
def test_the_peer_waiting_in_the_collective_is_not_blamed(
    tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    ready = str(tmp_path / "ready")
    ps = [
        spawn(procs, PAIR, R=str(r), PORT=port, READY=ready, GLOO_SOCKET_IFNAME="lo")
        for r in (0, 1)
    ]
    wait_for(lambda: all(Path(f"{ready}{r}").exists() for r in (0, 1)), 120, "the process group")

    def judged() -> list[str] | None:
        got = look([(r, p.pid, "") for r, p in enumerate(ps)], sample_s=0.2)
        verdicts = [x.verdict for x in got]
        return verdicts if verdicts == [WAITING, OUTSIDE] else None

    assert wait_for(judged, 60, "rank 0 waiting in all_reduce, rank 1 outside")
