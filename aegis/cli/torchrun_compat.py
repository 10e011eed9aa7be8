"""torchrun's habits in `aegis run`: its flags where they mean the same, a clear no where not.

`aegis run` launches a command as torchrun does (torchrun's environment for every rank), so a
torchrun user's command line should work or say exactly what to change:

- the same meaning, accepted: `--nproc_per_node` (and every `--x_y` spelling torchrun takes for
  a flag Aegis has as `--x-y`), `--max-restarts` (= `--max-retry`: restarts allowed before
  the job fails), `--standalone` (`aegis run` always runs on this machine with its own
  rendezvous), `-m/--module`, `--no-python`, and `python` implied for a script path;
- torchrun flags with no equivalent are refused by the `run` parser, naming what Aegis does
  instead (`--rdzv-backend`, `--master-port`, `--redirects`, `--tee`, ...).

A flag some other part of the parser defines (e.g. a multi-host `--node-rank`) is never
refused here: only flags the parser does not know get a refusal.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

# torchrun flag -> why Aegis has no such flag and what to use instead
REFUSED: dict[str, str] = {
    "--rdzv-backend": "aegis run hosts the rendezvous itself (its controller gives each order "
    "MASTER_ADDR and a fresh MASTER_PORT; across hosts: --rdzv-endpoint names node 0): drop it",
    "--rdzv-id": "the job's name is its run id (TORCHELASTIC_RUN_ID): use --job NAME",
    "--rdzv-conf": "aegis run hosts the rendezvous itself: drop it",
    "--rdzv-endpoint": "aegis run hosts the rendezvous itself on this machine: drop it",
    "--node-rank": "aegis run starts every node agent on this machine and ranks them itself: "
    "drop it",
    "--master-addr": "the controller sets MASTER_ADDR for every order (across hosts: "
    "--rdzv-endpoint names node 0): drop it",
    "--master-port": "the controller sets a fresh MASTER_PORT for every order (a restart must "
    "not meet the old rendezvous): drop it",
    "--local-addr": "aegis run binds the ranks' rendezvous on this machine: drop it",
    "--monitor-interval": "each agent watches its ranks continuously: drop it",
    "--start-method": "every rank is a process of its own (torchrun's spawn): drop it",
    "--role": "every rank has the role 'default', as in torchrun: drop it",
    "--run-path": "run the script as a command: aegis run -- python SCRIPT",
    "--redirects": "every rank's output is forwarded with a [rank<N>]: prefix; --log-dir DIR "
    "also writes each rank's stdout and stderr to files",
    "--tee": "every rank's output is forwarded with a [rank<N>]: prefix; --log-dir DIR also "
    "writes each rank's stdout and stderr to files",
    "--local-ranks-filter": "every rank's output is forwarded; --log-dir DIR keeps each rank's "
    "apart",
    "--logs-specs": "use --log-dir DIR (DIR/<pod>/attempt_<n>/<local rank>/)",
    "--event-log-handler": "faults are logged in the state dir's faults.jsonl: use --state-dir",
    "--numa-binding": "not supported: bind inside the training script",
    "--signals-to-handle": "the agents forward SIGTERM, SIGINT, SIGHUP and SIGQUIT, as torchrun "
    "does by default: drop it",
    "--shutdown-timeout": "ranks get 10 s between SIGTERM and SIGKILL: drop it",
    "--virtual-local-rank": "not supported",
    "--duplicate-stdout-filters": "use --log-dir DIR",
    "--duplicate-stderr-filters": "use --log-dir DIR",
}
SHORT_REFUSED = {"-r": "--redirects", "-t": "--tee"}


class _Refuse(argparse.Action):
    """A torchrun flag Aegis does not take: the run parser's error says what to do instead."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs["nargs"] = "?"  # `--master-port 1234` and `--standalone`-like forms alike
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any, **__: Any) -> NoReturn:
        flag = next(s for s in self.option_strings if s.startswith("--"))
        parser.error(f"{flag} is torchrun's; aegis run has no such flag: {REFUSED[flag]}")


def _underscored(flag: str) -> str:
    return "--" + flag[2:].replace("-", "_")


def add_torchrun_flags(run: argparse.ArgumentParser) -> None:
    """Add torchrun's spellings and flags to the `run` parser: call it after every flag of
    Aegis's own is defined (a flag defined later would clash with a refusal)."""
    run.add_argument(
        "--max-restarts",
        "--max_restarts",
        dest="max_retry",
        type=int,
        help="torchrun's name of --max-retry",
    )
    run.add_argument(
        "--standalone",
        action="store_true",
        help="torchrun's single-machine mode: what aegis run always is (accepted, no effect)",
    )
    run.add_argument(
        "-m",
        "--module",
        action="store_true",
        help="run the command's first word as a Python module (python -m MODULE ...)",
    )
    run.add_argument(
        "--no-python",
        "--no_python",
        action="store_true",
        help="run a .py script as it is, without python in front (it needs its '#!' line)",
    )
    _add_underscore_aliases(run)
    _add_refusals(run)


def _add_underscore_aliases(run: argparse.ArgumentParser) -> None:
    """torchrun's underscore spellings of the flags defined so far, as hidden aliases (the
    help shows one spelling; argparse has no public way to give an action another one)."""
    known = run._option_string_actions
    for flag, action in list(known.items()):
        alias = _underscored(flag)
        if flag.startswith("--") and alias != flag and alias not in known:
            known[alias] = action


def _add_refusals(run: argparse.ArgumentParser) -> None:
    """torchrun's flags that Aegis refuses (each spelling not already a flag of its own)."""
    known = run._option_string_actions
    for flag in REFUSED:
        spellings = [flag, _underscored(flag)]
        spellings += [s for s, long in SHORT_REFUSED.items() if long == flag]
        spellings = [s for s in spellings if s not in known]
        if flag in spellings:  # not a flag of Aegis's own (another module may define it)
            run.add_argument(*spellings, action=_Refuse, help=argparse.SUPPRESS)


def training_command(cmd: Sequence[str], *, module: bool, no_python: bool) -> list[str]:
    """The command to run from `aegis run`'s trailing words, as torchrun builds it: `-m`
    runs `python -m WORDS...`; a first word that is a `.py` script gets python in front
    (torchrun puts it in front of any script) unless `--no-python`."""
    words = list(cmd)
    if words[:1] == ["--"]:
        words = words[1:]
    if not words:
        return words
    python = os.environ.get("PYTHON_EXEC", sys.executable)  # torchrun's own override
    if module:
        return [python, "-m", *words]
    if words[0].endswith(".py") and not no_python:
        return [python, *words]
    return words


def unknown_flag_error(run: argparse.ArgumentParser, extra: Sequence[str]) -> str:
    """The `run` parser's message for words it did not recognise (with the nearest flag)."""
    first = next((w for w in extra if w.startswith("-")), extra[0])
    near = nearest_flag(first.split("=", 1)[0], list(run._option_string_actions))
    hint = f" (did you mean {near}?)" if near else ""
    where = "" if near else "; the training command goes last: aegis run [flags] [--] CMD..."
    return f"unrecognized arguments: {' '.join(extra)}{hint}{where}"


def nearest_flag(flag: str, flags: Sequence[str]) -> str | None:
    """The flag `flag` was most likely meant to be: the longest shared start first (a typo
    is usually at the end: --nprocs, --nproc-per-nod), then similarity; None if none is near."""
    if not flag.startswith("--"):
        return None

    def score(other: str) -> tuple[int, float]:
        pairs = zip(flag, other, strict=False)
        shared = next((i for i, (a, b) in enumerate(pairs) if a != b), None)
        shared = (min(len(flag), len(other)) if shared is None else shared) - 2
        return shared, difflib.SequenceMatcher(None, flag, other).ratio()

    best = max((f for f in flags if f.startswith("--")), key=score, default=None)
    if best is None:
        return None
    shared, ratio = score(best)
    return best if shared >= 4 or ratio >= 0.75 else None
