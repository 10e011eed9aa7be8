"""`aegis` command line: wires subcommands, each defined in its own module."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from aegis.cli.torchrun_compat import unknown_flag_error
from aegis.errors import AegisError

# (group, module): each module has `register(subparsers)` adding its subcommand(s) with a
# `func(args) -> int` default. Group None = top-level command.
_SPEC_COMMANDS = (
    "aegis.cli.spec_check",
    "aegis.cli.spec_gen",
    "aegis.cli.spec_conform",
    "aegis.cli.spec_validate",
    "aegis.cli.spec_update",
)
# each top-level module and the commands it registers: a process imports only the module of
# the command it runs (an agent or a controller does not load Kubernetes or the generator)
_TOP_COMMANDS: dict[str, tuple[str, ...]] = {
    "aegis.cli.check": ("check",),
    "aegis.cli.k8s": ("k8s",),
    "aegis.cli.run": ("run", "agent", "controller"),
    "aegis.cli.ctl": ("ctl",),
    "aegis.cli.timeline": ("timeline",),
}


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser of the command `argv` names (of every command when it names none, as for
    `aegis --help` or a typo)."""
    parser = argparse.ArgumentParser(
        prog="aegis", description="Fault-tolerance controller for distributed PyTorch training."
    )
    top = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    first = next((a for a in argv if not a.startswith("-")), None)
    modules = [m for m, commands in _TOP_COMMANDS.items() if first in commands]
    if first == "spec" or not modules:
        spec = top.add_parser("spec", help="model-check, generate code from, and conform the spec")
        spec_sub = spec.add_subparsers(dest="spec_command", required=True, metavar="SUBCOMMAND")
        for name in _SPEC_COMMANDS:
            importlib.import_module(name).register(spec_sub)
        if first != "spec":
            modules = list(_TOP_COMMANDS)
    for name in modules:
        importlib.import_module(name).register(top)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's own parser (`aegis run: error: ...`), with a hint
        own = getattr(args, "parser", None)
        if own is None:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        own.error(unknown_flag_error(own, extra))
    try:
        return int(args.func(args))
    except AegisError as exc:
        print(f"aegis: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
