"""deploy/slurm/train_ddp.sbatch: its `srun aegis run` line is a job across hosts as written,
on every node of the allocation the script asks for."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from aegis.cli import build_parser
from aegis.cli.run_nodes import node_job, wants_nodes

SBATCH = Path(__file__).resolve().parents[2] / "deploy" / "slurm" / "train_ddp.sbatch"


def test_the_sbatch_example_parses_on_every_node() -> None:
    text = SBATCH.read_text()
    nodes = int(re.search(r"#SBATCH --nodes=(\d+)", text).group(1))  # type: ignore[union-attr]
    assert "#SBATCH --ntasks-per-node=1" in text and "export AEGIS_JOIN_SECRET=" in text
    joined = text.replace("\\\n", " ")  # continuation lines
    line = next(x for x in joined.splitlines() if x.startswith("srun "))
    argv = shlex.split(line)
    argv = argv[argv.index("aegis") + 1 :]
    argv = [a.replace("$HOME", "/home/u").replace("$SLURM_JOB_ID", "42") for a in argv]
    for rank in range(nodes):
        env = {
            "SLURM_NODEID": str(rank),
            "SLURM_NNODES": str(nodes),
            "SLURM_JOB_NODELIST": f"gpu[01-{nodes:02d}]",
            "SLURM_STEP_TASKS_PER_NODE": f"1(x{nodes})",
            "AEGIS_JOIN_SECRET": "0123456789abcdef0123",
        }
        args = build_parser(argv).parse_args(argv)
        assert wants_nodes(args, env)
        job = node_job(args, env)
        assert (job.nnodes, job.node_rank, job.endpoint) == (nodes, rank, "gpu01:29400")
        assert args.cmd[-1] == "examples/train_ddp.py"
