"""LocalRanks with real processes: one outcome for K ranks, the first failure named."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from aegis.runtime.agent.ranks import LocalRanks, Placement, RankFailure, read_error_file
from aegis.runtime.agent.runner import group_alive

PLACE = Placement(node_rank=1, nnodes=2, nproc=3, master_addr="127.0.0.1", master_port=1,
                  run_id="r", job="j", pod="j-worker-1")  # fmt: skip


def ranks(tmp: Path, code: str) -> LocalRanks:
    return LocalRanks([sys.executable, "-c", code], PLACE, env={}, work_dir=tmp)


async def test_every_rank_exiting_0_is_no_failure(tmp_path: Path) -> None:
    code = (
        "import os; print(os.environ['RANK'], os.environ['LOCAL_RANK'], os.environ['WORLD_SIZE'])"
    )
    group = ranks(tmp_path, code)
    await group.start(retry=0)
    assert await group.wait() is None
    assert [r.rank.rank for r in group.runners] == [3, 4, 5]  # node 1 of 2, 3 ranks each
    assert {r.rank.world_size for r in group.runners} == {6}


async def test_the_first_failure_stops_the_others(tmp_path: Path) -> None:
    # local rank 1 exits 7 at once; ranks 0 and 2 would run for a minute
    code = "import os, sys, time\nif os.environ['LOCAL_RANK'] == '1': sys.exit(7)\ntime.sleep(60)\n"
    group = ranks(tmp_path, code)
    await group.start(retry=0)
    started = time.monotonic()
    failure = await group.wait(grace=5.0)
    assert failure == RankFailure(local_rank=1, rank=4, exit_code=7)
    assert time.monotonic() - started < 30  # the sleepers were stopped, not waited for
    assert not group.running
    assert not any(group_alive(r.pid) for r in group.runners if r.pid is not None)
    assert failure.describe() == "local rank 1 (rank 4) failed with exit code 7"


async def test_a_signal_is_named(tmp_path: Path) -> None:
    code = (
        "import os, signal\n"
        "if os.environ['LOCAL_RANK'] == '2': os.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    group = ranks(tmp_path, code)
    await group.start(retry=0)
    failure = await group.wait()
    assert failure is not None and failure.describe() == (
        "local rank 2 (rank 5) failed with signal SIGSEGV"
    )


async def test_the_exception_of_a_rank_under_record_is_read(tmp_path: Path) -> None:
    code = (
        "import os\n"
        "from torch.distributed.elastic.multiprocessing.errors import record\n"
        "@record\n"
        "def main():\n"
        "    if os.environ['LOCAL_RANK'] == '0':\n"
        "        raise ValueError('bad batch at step 3')\n"
        "main()\n"
    )
    group = ranks(tmp_path, code)
    await group.start(retry=0)
    failure = await group.wait()
    assert failure is not None and failure.local_rank == 0
    assert failure.exception == "ValueError: bad batch at step 3"
    assert failure.describe().endswith("exit code 1: ValueError: bad batch at step 3")


async def test_a_command_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    from aegis.runtime.errors import RunnerError

    group = LocalRanks(["/no/such/pyhton"], PLACE, env={}, work_dir=tmp_path)
    with pytest.raises(RunnerError, match="cannot start"):
        await group.start(retry=0)
    assert not group.running


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"message": {"message": "KeyError: 'x'", "extraInfo": {}}}, "KeyError: 'x'"),
        ({"message": "RuntimeError: NCCL"}, "RuntimeError: NCCL"),
        ({"message": 3}, ""),
        ([], ""),
    ],
)
def test_error_files_are_read_leniently(tmp_path: Path, content: object, expected: str) -> None:
    path = tmp_path / "error.json"
    path.write_text(json.dumps(content))
    assert read_error_file(str(path)) == expected
    assert read_error_file(str(tmp_path / "missing.json")) == ""
