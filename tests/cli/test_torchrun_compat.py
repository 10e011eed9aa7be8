"""`aegis run` with torchrun's habits: the same flags where they mean the same, python implied
for a script, `-n` optional, and a clear error from the `run` parser for the rest."""

from __future__ import annotations

import argparse
import sys

import pytest

from aegis.cli import build_parser, main
from aegis.cli.run import single_machine_nodes
from aegis.cli.torchrun_compat import (
    REFUSED,
    add_torchrun_flags,
    nearest_flag,
    training_command,
)


def parse(*argv: str) -> argparse.Namespace:
    args, extra = build_parser(["run", *argv]).parse_known_args(["run", *argv])
    assert not extra
    return args


def nodes(args: argparse.Namespace) -> int:
    """The number of nodes `aegis run` runs on this machine (not given: 1)."""
    return single_machine_nodes(args.workers)


def command(*argv: str) -> list[str]:
    args = parse(*argv)
    return training_command(args.cmd, module=args.module, no_python=args.no_python)


def test_a_torchrun_command_line_runs_as_torchrun_would() -> None:
    args = parse("--nproc_per_node", "2", "--max_restarts", "5", "--standalone", "t.py", "-n", "7")
    assert (nodes(args), args.nproc_per_node, args.max_retry) == (1, "2", 5)
    # as in torchrun, every word after the script is the script's
    assert command("--nproc_per_node", "2", "t.py", "-n", "7") == [
        sys.executable,
        "t.py",
        "-n",
        "7",
    ]
    assert command("-m", "pkg.train", "--lr", "1") == [
        sys.executable,
        "-m",
        "pkg.train",
        "--lr",
        "1",
    ]
    assert command("--no-python", "./t.py") == ["./t.py"]
    assert command("--no_python", "--", "./t.py") == ["./t.py"]
    assert command("-n", "2", "--", "python3", "t.py") == ["python3", "t.py"]
    assert command("--", "sh", "-c", "exit 0") == ["sh", "-c", "exit 0"]


def test_nodes_default_to_one_and_a_flag_before_n_is_fine() -> None:
    assert nodes(parse("x")) == 1
    assert nodes(parse("--nproc-per-node", "2", "-n", "3", "x")) == 3
    assert nodes(parse("--nnodes", "2:2", "x")) == 2
    assert parse("--max-retry", "4", "x").max_retry == 4
    assert parse("x").max_retry == 3  # the default, not the alias's


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--master-port", "29500", "t.py"], "--master-port is torchrun's; aegis run has no such"),
        (["--master_addr=h", "t.py"], "--master-addr is torchrun's"),
        (["--rdzv-backend", "c10d", "t.py"], "hosts the rendezvous itself"),
        (["-r", "3", "t.py"], "--redirects is torchrun's"),
        (["--tee", "3", "t.py"], "--log-dir DIR"),
        (["--nnodes", "1:4", "t.py"], "MIN:MAX needs --rdzv-endpoint and --node-rank"),
        (["-n", "default", "t.py"], "the job's namespace is --namespace"),
        (["-n", "0", "t.py"], "use at least 1 node"),
        (
            ["--nprocs", "2", "t.py"],
            "unrecognized arguments: --nprocs (did you mean --nproc-per-node?)",
        ),
        (["--bogus", "t.py"], "the training command goes last"),
    ],
)
def test_the_run_parser_says_what_to_use_instead(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["run", *argv])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "aegis run: error: " in err and says in err
    assert "required" not in err


def test_every_refusal_has_a_reason_and_every_spelling_is_refused() -> None:
    top = build_parser(["run"])
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    run = sub.choices["run"]
    for flag in REFUSED:
        assert flag in run._option_string_actions
        assert "--" + flag[2:].replace("-", "_") in run._option_string_actions


def test_a_flag_another_module_defines_is_never_refused() -> None:
    """A multi-host `--node-rank` defined by `aegis run` itself stays its own."""
    run = argparse.ArgumentParser(prog="aegis run")
    run.add_argument("--node-rank", type=int, default=0)
    run.add_argument("cmd", nargs=argparse.REMAINDER)
    add_torchrun_flags(run)
    args = run.parse_args(["--node_rank", "3", "x"])
    assert args.node_rank == 3


def test_nearest_flag() -> None:
    flags = ["--nnodes", "--nproc-per-node", "--max-retry", "--state-dir"]
    assert nearest_flag("--nprocs", flags) == "--nproc-per-node"
    assert nearest_flag("--max-retries", flags) == "--max-retry"
    assert nearest_flag("--statedir", flags) == "--state-dir"
    assert nearest_flag("--zzz", flags) is None
    assert nearest_flag("train.py", flags) is None
