"""The runner with real processes: torchrun env, prefixed output, exit codes, tree kill."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from aegis.runtime.agent.runner import RankEnv, Runner, group_alive
from aegis.runtime.errors import RunnerError

from ..support import wait_for_async

RANK = RankEnv(
    rank=3,
    world_size=4,
    local_rank=1,
    local_world_size=2,
    master_addr="10.1.2.3",
    master_port=29600,
    run_id="job-7",
    job="train-a",
    pod="train-a-worker-3",
    max_restarts=2,
)


class Lines:
    """A text sink the runner writes to; tests wait on what it received."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


def python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def runner(code: str, rank: RankEnv = RANK) -> tuple[Runner, Lines, Lines]:
    out, err = Lines(), Lines()
    return Runner(python(code), rank, stdout=out, stderr=err), out, err  # type: ignore[arg-type]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


async def test_child_sees_torchrun_and_aegis_env() -> None:
    keys = [
        "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
        "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID",
        "AEGIS_JOB", "AEGIS_POD", "AEGIS_RETRY",
    ]  # fmt: skip
    r, out, _ = runner(f"import json, os; print(json.dumps({{k: os.environ[k] for k in {keys}}}))")
    await r.start(retry=2)
    assert await r.wait() == 0
    assert out.lines[0].startswith("[rank3]:")
    env = json.loads(out.lines[0].removeprefix("[rank3]:"))
    assert env == {
        "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": "1", "ROLE_RANK": "3", "MASTER_ADDR": "10.1.2.3", "MASTER_PORT": "29600",
        "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_RUN_ID": "job-7",
        "AEGIS_JOB": "train-a", "AEGIS_POD": "train-a-worker-3", "AEGIS_RETRY": "2",
    }  # fmt: skip


async def test_output_is_prefixed_per_stream_and_exit_code_returned() -> None:
    r, out, err = runner(
        """
        import sys
        print("one"); print("two", file=sys.stderr); sys.stdout.write("no newline")
        sys.exit(3)
        """
    )
    before = r.last_output
    await r.start()
    assert await r.wait() == 3
    assert out.lines == ["[rank3]:one", "[rank3]:no newline"]
    assert err.lines == ["[rank3]:two"]
    assert r.last_output >= before and r.returncode == 3 and not r.running


async def test_death_by_signal_is_a_negative_code() -> None:
    r, _, _ = runner("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    await r.start()
    assert await r.wait() == -signal.SIGKILL


async def test_stop_kills_the_whole_tree_even_if_a_grandchild_ignores_sigterm() -> None:
    grandchild = """
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("grandchild", os.getpid(), flush=True)
        while True:
            time.sleep(60)
    """
    r, out, _ = runner(
        f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", {textwrap.dedent(grandchild)!r}])
        while True:
            time.sleep(60)
        """
    )
    await r.start()
    await wait_for_async(lambda: any("grandchild" in line for line in out.lines), 10, "grandchild")
    gpid = int(next(line for line in out.lines if "grandchild" in line).split()[-1])
    assert os.getpgid(gpid) == r.pid
    code = await r.stop(grace=0.5)
    assert code == -signal.SIGTERM
    assert not alive(gpid) and not group_alive(r.pid or 0)


async def test_stop_after_a_clean_exit_and_restart_counts() -> None:
    r, out, _ = runner("import os; print(os.environ['TORCHELASTIC_RESTART_COUNT'])")
    await r.start()
    assert await r.wait() == 0
    assert await r.stop(grace=0.1) == 0
    await r.restart(grace=0.1, retry=1)
    assert await r.wait() == 0
    assert out.lines == ["[rank3]:0", "[rank3]:1"] and r.restart_count == 1


async def test_restart_stops_a_running_command_first() -> None:
    r, _, _ = runner("import time; time.sleep(60)")
    await r.start()
    first = r.pid
    await r.restart(grace=2.0)
    assert r.pid != first and r.running
    assert await r.stop(grace=2.0) == -signal.SIGTERM


async def test_errors_are_clear() -> None:
    with pytest.raises(RunnerError, match="cannot start"):
        await Runner(["/nonexistent/train"], RANK).start()
    with pytest.raises(RunnerError, match="not been started"):
        await Runner(["true"], RANK).wait()
    with pytest.raises(RunnerError, match=r"rank 4 is not in 0\.\.3"):
        RankEnv(rank=4, world_size=4)
    r, _, _ = runner("import time; time.sleep(60)")
    await r.start()
    with pytest.raises(RunnerError, match="already running"):
        await r.start()
    assert await r.stop(grace=2.0) == -signal.SIGTERM


def test_who_hosts_the_store_is_told_to_torch() -> None:
    """torch's env:// rendezvous: with an agent store every rank is a client (no rank binds
    MASTER_PORT); without one rank 0 hosts the store."""
    assert RANK.environ(0, 0)["TORCHELASTIC_USE_AGENT_STORE"] == "False"
    hosted = RankEnv(0, 2, agent_store=True)
    assert hosted.environ(0, 0)["TORCHELASTIC_USE_AGENT_STORE"] == "True"
