"""Re-verify the mutant lists after a spec edit, and say what a human must decide about each.

Two lists pin the spec and the generated code: the spec mutants (`spec/mutants/mutants.toml`,
each one killed by TLC: tools.tlc.mutants) and the generated-code mutants
(aegis.conformance.mutants, each one killed by conformance). After an edit a mutant may no
longer apply (its text moved) or no longer be killed (the edit made it equivalent, or a
property went missing). `MUTANT_CHECKS` is the list `aegis spec update` runs: each check
takes the Recheck context and returns its findings; point an entry at another entry point
(e.g. an anchored-mutant runner) to change how a list is verified.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aegis.conformance import mutants as code_mutants
from aegis.conformance.session import Baseline, kill
from aegis.errors import AegisError
from tools.tlc import mutants as spec_mutants


@dataclass(frozen=True)
class Recheck:
    """What the checks need: the spec, its cfg, TLC's baseline of the freshly generated
    package, and whether to run the mutants (else only check that each still applies)."""

    spec: Path
    cfg: Path
    base: Baseline
    run: bool
    progress: Callable[[str], None] = lambda _line: None  # one line per mutant as it ends


@dataclass(frozen=True)
class Finding:
    """One mutant a human must look at: which list, which mutant, and what to decide."""

    mutants: str
    name: str
    decide: str

    def __str__(self) -> str:
        return f"{self.mutants} mutant {self.name}: {self.decide}"


MutantCheck = Callable[[Recheck], tuple[int, list[Finding]]]


def spec_mutants_file(spec: Path) -> Path:
    """Where a spec's TLC mutants are listed: `mutants/mutants.toml` beside the spec."""
    return spec.parent / "mutants" / "mutants.toml"


def check_spec_mutants(ctx: Recheck) -> tuple[int, list[Finding]]:
    """Each spec mutant still applies and (with `run`) TLC still gives its verdict (the one
    `bench/spec_mutation.py` judges by: tools.tlc.mutants.verdict; an equivalent one none)."""
    path = spec_mutants_file(ctx.spec)
    if not path.is_file():
        return 0, []
    listed = spec_mutants.load_mutants(path)
    text = ctx.spec.read_text(encoding="utf-8")
    found: list[Finding] = []
    for i, m in enumerate(listed, start=1):
        try:
            spec_mutants.apply_patch(text, m)
        except AegisError as exc:
            found.append(Finding("spec", m.name, f"{exc}; update its find text in {path}"))
            continue
        if ctx.run:
            ok, said = spec_mutants.verdict(m, spec_mutants.run_mutant(ctx.spec, ctx.cfg, m))
            ctx.progress(f"spec mutant {i}/{len(listed)} {m.name}: {said}")
            if not ok:
                found.append(
                    Finding(
                        "spec",
                        m.name,
                        f"TLC reports {said}, the list expects {m.expected}: make it equivalent "
                        "(say why) or restore the property that caught it",
                    )
                )
    return len(listed), found


def check_code_mutants(ctx: Recheck) -> tuple[int, list[Finding]]:
    """Each generated-code mutant still applies to the fresh package and (with `run`) the
    fast ones are still killed by conformance. Only for the package the list was written for."""
    package = ctx.base.package
    if Path(str(package.__file__)).parent.name != "aegis_phase":
        return 0, []
    src = Path(str(package.__file__)).parent
    total = len(code_mutants.MUTANTS)
    found = [
        finding
        for i, m in enumerate(code_mutants.MUTANTS, start=1)
        if (finding := _check_code_mutant(ctx, src, m, f"{i}/{total}")) is not None
    ]
    return total, found


def _check_code_mutant(
    ctx: Recheck, src: Path, m: code_mutants.Mutant, counted: str
) -> Finding | None:
    """What is wrong with one generated-code mutant: its text no longer applies, or (with
    `run`, a fast one) conformance no longer kills it; None if nothing."""
    source = (src / f"{m.file}.py").read_text(encoding="utf-8")
    try:
        code_mutants.patch(source, m)
    except AegisError as exc:
        where = "aegis/conformance/mutants.py"
        return Finding("code", m.name, f"{exc}; update its text in {where}")
    if not (ctx.run and m.name in code_mutants.FAST):
        return None
    killed = kill([ctx.base], m).killed
    ctx.progress(f"code mutant {counted} {m.name}: {'killed' if killed else 'survives'}")
    if killed:
        return None
    return Finding(
        "code",
        m.name,
        "survives conformance: it became equivalent, or the model no longer reaches what it breaks",
    )


MUTANT_CHECKS: dict[str, MutantCheck] = {
    "spec": check_spec_mutants,
    "code": check_code_mutants,
}
