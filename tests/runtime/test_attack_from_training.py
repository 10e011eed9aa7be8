"""The training code cannot act as its agent (issue 13), in a real `aegis run`.

The training command (tests/runtime/scripts/attacking_train.py) looks for secrets in its
environment, for ctl.json through every path it is told, and in its agent's initial
environment (/proc/<ppid>/environ: same OS user in local mode). It finds no token to ask the
credential service with, and the job then trains and ends exactly as without the attack
(tests/runtime/test_attacks_in_run.py tries much more).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..support import Launch
from ..support.launch import RUN_MARKER

SCRIPT = str(Path(__file__).with_name("scripts") / "attacking_train.py")


def test_the_training_command_cannot_become_its_agent(tmp_path: Path, aegis_run: Launch) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    r = aegis_run(2, cmd=[sys.executable, SCRIPT], env={"ATTACK_REPORT_DIR": str(reports)})
    assert r.finish(240) == 0, r.output[-3000:]
    assert "rank 0 done (restart 0)" in r.stdout and "rank 1 done (restart 0)" in r.stdout
    status = r.status()
    assert (status["phase"], status["recoverCount"]) == ("Succeed", 0)
    for rank in (0, 1):
        found = json.loads((reports / f"rank{rank}.json").read_text())
        # the command is told its names, the retry count, where its markers and stack dumps
        # go and how to reach its agent's checkpoint store (a token for that store alone:
        # docs/checkpoints.md); nothing of the agent's own (its proof, the credential service,
        # paths of the launcher); AEGIS_TEST_RUN is the test's marker on every process of a run
        told = {"AEGIS_JOB", "AEGIS_POD", "AEGIS_RETRY", "AEGIS_PROGRESS_FILE"}
        rank_side = {
            "AEGIS_CHECKPOINT_FILE",
            "AEGIS_CHECKPOINT_SOCKET",
            "AEGIS_CHECKPOINT_TOKEN",
            "AEGIS_STACK_FILE",
            RUN_MARKER,
        }
        assert told <= set(found["aegis_vars"]) <= told | rank_side
        assert not found["token_in_env"] and found["ctl_files"] == []
        # same OS user: the agent's initial environment is readable (root here), but it
        # holds no token any more: the proof of the agent's incarnation was handed to it on
        # an inherited socket (docs/security.md), which the command never had
        assert not found["parent_token"]
        assert found["credentials"] == ["no token or credential service in reach"]
