"""`aegis` command line: wires subcommands, each defined in its own module."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

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
_TOP_COMMANDS: tuple[str, ...] = (
    "aegis.cli.check",
    "aegis.cli.k8s",
    "aegis.cli.run",
    "aegis.cli.ctl",
    "aegis.cli.timeline",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aegis", description="Fault-tolerance controller for distributed PyTorch training."
    )
    top = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    spec = top.add_parser("spec", help="model-check, generate code from, and conform the spec")
    spec_sub = spec.add_subparsers(dest="spec_command", required=True, metavar="SUBCOMMAND")
    for name in _SPEC_COMMANDS:
        importlib.import_module(name).register(spec_sub)
    for name in _TOP_COMMANDS:
        importlib.import_module(name).register(top)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except AegisError as exc:
        print(f"aegis: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
