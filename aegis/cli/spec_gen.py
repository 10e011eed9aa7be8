"""`aegis spec gen` (regenerate aegis/generated/ from the spec) and `aegis spec diagram`."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from codegen import diagram, pipeline
from tools.tlc import check_translation


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `gen` and `diagram` to the `aegis spec` subcommands."""
    gen = sub.add_parser(
        "gen",
        help="generate Python from the spec into aegis/generated/ (refused while the spec's "
        "PlusCal translation is stale)",
    )
    _common(gen)
    gen.add_argument("--out", type=Path, help="output directory (default: aegis/generated)")
    gen.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 with a diff if stale"
    )
    gen.set_defaults(func=run_gen)
    dia = sub.add_parser("diagram", help="print the phase machine's diagram")
    _common(dia)
    dia.add_argument("--format", choices=diagram.FORMATS, default="mermaid")
    dia.set_defaults(func=run_diagram)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", nargs="?", type=Path, help="spec (default: spec/AegisPhase.tla)")
    p.add_argument("--cfg", type=Path, help="model config (default: SPEC with .cfg)")
    p.add_argument(
        "--phase-var", default="phase", help="variable of the phase machine (default: phase)"
    )


def run_gen(args: argparse.Namespace) -> int:
    """Regenerate, or with --check report whether the committed code is stale."""
    default_spec, default_out = pipeline.default_paths()
    spec = args.spec or default_spec
    out = args.out or default_out
    check_translation(spec)  # code generated from a stale translation would be stale too
    gen = pipeline.generate(spec, args.cfg, args.phase_var)
    if args.check:
        stale = pipeline.diff(gen, out)
        if stale:
            sys.stdout.write(stale)
            print(f"{out / gen.package} is stale: run `aegis spec gen`", file=sys.stderr)
            return 1
        print(f"{out / gen.package} is up to date")
        return 0
    written = pipeline.write(gen, out)
    for path in written:
        print(f"wrote {path}")
    if not written:
        print(f"{out / gen.package} is up to date")
    return 0


def run_diagram(args: argparse.Namespace) -> int:
    """Print the phase diagram of the committed package, or of SPEC when given."""
    if args.spec is None and args.cfg is None:
        spec, out = pipeline.default_paths()
        module = pipeline.load(out, pipeline.package_name(spec.stem))
        print(diagram.render(module, args.format), end="")
        return 0
    spec = args.spec or pipeline.default_paths()[0]
    gen = pipeline.generate(spec, args.cfg, args.phase_var)
    with tempfile.TemporaryDirectory(prefix="aegis-diagram-") as tmp:
        pipeline.write(gen, Path(tmp))
        module = pipeline.load(Path(tmp), gen.package)
        print(diagram.render(module, args.format), end="")
    return 0
