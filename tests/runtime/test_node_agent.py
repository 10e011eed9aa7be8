"""One agent per node supervising K ranks (`--nproc-per-node`), as torchrun users expect."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from ..support import Launch

SCRIPTS = Path(__file__).with_name("scripts")

SAME = "equal"
# every variable torchrun sets for a worker, and how Aegis's value must relate to torchrun's
COMPARED: dict[str, str] = {
    "RANK": SAME,
    "LOCAL_RANK": SAME,
    "WORLD_SIZE": SAME,
    "LOCAL_WORLD_SIZE": SAME,
    "GROUP_RANK": SAME,
    "GROUP_WORLD_SIZE": SAME,
    "ROLE_RANK": SAME,
    "ROLE_NAME": SAME,
    "ROLE_WORLD_SIZE": SAME,
    "TORCHELASTIC_RESTART_COUNT": SAME,
    "TORCHELASTIC_MAX_RESTARTS": SAME,
    "TORCHELASTIC_SIGNALS_TO_HANDLE": SAME,
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": SAME,
    "OMP_NUM_THREADS": SAME,
    "MASTER_ADDR": "the same host",
    "MASTER_PORT": "a port",
    "TORCHELASTIC_RUN_ID": "an id, the same for every rank",
    "TORCHELASTIC_ERROR_FILE": "a path of its own per rank",
    # torchrun's agent hosts the rendezvous store; so does Aegis' (node 0's diagnosis worker)
    "TORCHELASTIC_USE_AGENT_STORE": SAME,
}


def dump(tmp: Path, name: str) -> Path:
    out = tmp / name
    out.mkdir()
    return out


def read(where: Path, rank: int) -> dict[str, str]:
    return dict(json.loads((where / f"rank{rank}.json").read_text()))


def added(env: dict[str, str]) -> dict[str, str]:
    """The variables a launcher set (absent from, or different in, the test's environment)."""
    return {k: v for k, v in env.items() if os.environ.get(k) != v and k != "DUMP_DIR"}


def test_the_environment_is_torchruns(tmp_path: Path, aegis_run: Launch) -> None:
    script = [sys.executable, str(SCRIPTS / "dump_env.py")]
    ours, theirs = dump(tmp_path, "aegis"), dump(tmp_path, "torchrun")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1"]
    subprocess.run(
        [*torchrun, "--nproc-per-node", "2", "--max-restarts", "3", script[1]],
        env={**env, "DUMP_DIR": str(theirs)},
        check=True,
        timeout=120,
        capture_output=True,
    )
    r = aegis_run(1, "--nproc-per-node", "2", "--max-retry", "3", cmd=script,
                  env={"DUMP_DIR": str(ours)})  # fmt: skip
    assert r.finish(180) == 0, r.output[-2000:]
    same_host: Callable[[str], str] = lambda h: socket.gethostbyname(h)  # noqa: E731
    for rank in (0, 1):
        t, a = added(read(theirs, rank)), read(ours, rank)
        assert set(t) == set(COMPARED), "torchrun sets other variables now: compare them too"
        for var, how in COMPARED.items():
            assert var in a, f"Aegis does not set {var}"
            if how == SAME:
                assert a[var] == t[var], (var, a[var], t[var])
        assert same_host(a["MASTER_ADDR"]) == same_host(t["MASTER_ADDR"])
        assert 0 < int(a["MASTER_PORT"]) < 65536
    ids = {read(ours, r)["TORCHELASTIC_RUN_ID"] for r in (0, 1)}
    files = {read(ours, r)["TORCHELASTIC_ERROR_FILE"] for r in (0, 1)}
    assert len(ids) == 1 and len(files) == 2


def test_two_nodes_of_two_ranks_restart_in_place_and_name_the_exception(
    tmp_path: Path, aegis_run: Launch
) -> None:
    crash = dump(tmp_path, "crash")
    r = aegis_run(2, "--nproc-per-node", "2",
                  cmd=[sys.executable, str(SCRIPTS / "record_crash.py")],
                  env={"CRASH_DIR": str(crash)})  # fmt: skip
    assert r.finish(240) == 0, r.output[-3000:]
    for rank in range(4):
        assert f"rank {rank} of 4: all_reduce ok (restart 1)" in r.stdout
    assert "[rank3]:" in r.stdout  # output lines carry the global rank
    status = r.status()
    assert (status["phase"], status["recoverCount"]) == ("Succeed", 1)
    # one failure counted for the pod of node 1 (its local rank 1), not one per rank
    pods = status["podInfos"]
    reason = pods["local-worker-1"]["lastFailedReason"]
    assert reason == "local rank 1 (rank 3) failed with exit code 1: ValueError: boom on rank 3"
    faults = [json.loads(line) for line in (r.state / "faults.jsonl").read_text().splitlines()]
    errors = [f for f in faults if f["message"].startswith("error:")]
    assert [(f["pod"], f["node"]) for f in errors] == [("local-worker-1", "node-2")]
    assert "ValueError: boom on rank 3" in errors[0]["message"]
