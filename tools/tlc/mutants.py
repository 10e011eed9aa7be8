"""Spec mutants: re-introduce a bug into a temp copy of a spec and model-check it.

A mutant is anchored to the spec's structure (tools/tlc/anchor.py): the label, macro or
operator it changes (`anchor`) and the expression it replaces there (`find`), matched token
by token, so edits elsewhere in the spec or re-wrapping do not break it.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from aegis.errors import SpecError
from tools.tlc.anchor import locate
from tools.tlc.result import TlcResult, Violation
from tools.tlc.runner import run_tlc
from tools.tlc.translation import translate

ORIGINS = ("seed", "held-out", "ours", "fresh")
KINDS = ("invariant", "property", "liveness", "deadlock")


@dataclass(frozen=True)
class Mutant:
    """One bug as an anchored patch of the spec, and the verdict TLC must give."""

    name: str
    anchor: str  # the label, macro or operator the bug is in
    find: str  # the expression there that the bug changes
    replace: str
    why: str  # the bug in words
    expect_kind: str | None = None  # invariant | property | liveness | deadlock; None: equivalent
    expect_name: str | None = None
    origin: str = "ours"  # seed (the original's), held-out (issue 15), ours, fresh (issue 46)
    equivalent: str | None = None  # why the mutant changes no behaviour, when it does not
    constants: dict[str, str] = field(default_factory=dict)
    # checks left out of the cfg for this mutant: to show that the promise it names catches the
    # bug on its own where another check (listed here) finds the same behaviour first
    without: list[str] = field(default_factory=list)

    @property
    def expected(self) -> str:
        """The verdict in words: `invariant X`, `deadlock`, or `no error (equivalent)`."""
        if self.expect_kind is None:
            return "no error (equivalent)"
        return " ".join(x for x in (self.expect_kind, self.expect_name) if x)


def load_mutants(path: Path | str) -> list[Mutant]:
    """The mutants listed in a TOML file (`[[mutant]]` tables); SpecError for a bad entry."""
    where = Path(path)
    data = tomllib.loads(where.read_text(encoding="utf-8"))
    out = [_mutant(where, i, entry) for i, entry in enumerate(data.get("mutant", []))]
    names = [m.name for m in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SpecError(f"{where}: mutant names used twice: {', '.join(dup)}")
    return out


def _mutant(where: Path, index: int, entry: dict[str, Any]) -> Mutant:
    known = {f.name for f in fields(Mutant)}
    label = f"{where}: mutant {entry.get('name', f'#{index + 1}')}"
    unknown = sorted(set(entry) - known)
    if unknown:
        raise SpecError(f"{label}: unknown key(s) {', '.join(unknown)}")
    try:
        m = Mutant(**entry)
    except TypeError as exc:
        raise SpecError(f"{label}: {exc}") from None
    if m.origin not in ORIGINS:
        raise SpecError(f"{label}: origin must be one of {', '.join(ORIGINS)}")
    if (m.expect_kind is None) == (m.equivalent is None):
        raise SpecError(f"{label}: give expect_kind, or equivalent with the reason (not both)")
    if m.expect_kind is not None and m.expect_kind not in KINDS:
        raise SpecError(f"{label}: expect_kind must be one of {', '.join(KINDS)}")
    return m


def apply_patch(text: str, mutant: Mutant) -> str:
    """The spec with the mutant applied to its source part (the translation is redone after).

    SpecError unless the anchor names one unit and the expression occurs in it once.
    """
    try:
        span = locate(text, mutant.anchor, mutant.find)
    except SpecError as exc:
        raise SpecError(f"mutant {mutant.name}: {exc}") from None
    return text[: span.start] + mutant.replace + text[span.end :]


def override_constants(cfg_text: str, constants: dict[str, str]) -> str:
    """The cfg text with `NAME = value` lines replaced; SpecError for an unknown constant."""
    for name, value in constants.items():
        pattern = re.compile(rf"^(\s*{re.escape(name)}\s*=\s*).*$", re.MULTILINE)
        cfg_text, n = pattern.subn(lambda m: m.group(1) + value, cfg_text)  # noqa: B023
        if n != 1:
            raise SpecError(f"constant {name} is set {n} times in the cfg, expected once")
    return cfg_text


def drop_checks(cfg_text: str, names: list[str]) -> str:
    """The cfg text without the `INVARIANT name` / `PROPERTY name` lines of `names`; SpecError
    for a name the cfg does not check."""
    for name in names:
        pattern = re.compile(
            rf"^[ \t]*(?:INVARIANT|PROPERTY)[ \t]+{re.escape(name)}[ \t]*(?:\n|\Z)", re.MULTILINE
        )
        cfg_text, n = pattern.subn("", cfg_text)
        if n != 1:
            raise SpecError(f"check {name} is listed {n} times in the cfg, expected once")
    return cfg_text


@contextmanager
def mutated_copy(spec: Path, cfg: Path, mutant: Mutant) -> Iterator[tuple[Path, Path]]:
    """A temp dir holding the mutated, re-translated spec and its (overridden) cfg."""
    with tempfile.TemporaryDirectory(prefix=f"aegis-mutant-{mutant.name}-") as tmp:
        dst = Path(tmp) / spec.name
        dst.write_text(apply_patch(spec.read_text(encoding="utf-8"), mutant), encoding="utf-8")
        for sibling in spec.parent.glob("*.tla"):
            if sibling != spec:
                shutil.copy(sibling, Path(tmp) / sibling.name)
        translate(dst)
        dst_cfg = Path(tmp) / cfg.name
        dst_cfg.write_text(
            drop_checks(
                override_constants(cfg.read_text(encoding="utf-8"), mutant.constants),
                mutant.without,
            ),
            encoding="utf-8",
        )
        yield dst, dst_cfg


def run_mutant(
    spec: Path | str, cfg: Path | str, mutant: Mutant, timeout: float | None = None
) -> TlcResult:
    """Model-check the spec with the mutant's bug re-introduced, deterministically: one TLC
    worker (one search order, one counterexample) and liveness checked only once the search
    is done (`-lncheck final`). Otherwise TLC's periodic liveness checks race the search, and
    a stuck state is reported now as a deadlock, now as a violated Termination."""
    with mutated_copy(Path(spec), Path(cfg), mutant) as (mspec, mcfg):
        return run_tlc(mspec, mcfg, workers=1, extra_args=("-lncheck", "final"), timeout=timeout)


def _kind(v: Violation) -> str:
    """The violation's kind, a property violated by a lasso (a loop or stuttering at the
    end) being a liveness violation: TLC names a violated invariant or action property, not
    a temporal one."""
    return "liveness" if v.kind == "property" and v.loop is not None else v.kind


def verdict(mutant: Mutant, result: TlcResult) -> tuple[bool, str]:
    """Whether TLC gave the expected verdict, and what it said in words."""
    v = result.violation
    if result.timed_out:
        return False, "timed out"
    if v is None:
        return result.ok and mutant.expect_kind is None, "no error" if result.ok else "failed"
    kind = _kind(v)
    said = " ".join(x for x in (kind, v.name) if x)
    if mutant.expect_kind is None or kind != mutant.expect_kind:
        return False, said
    return mutant.expect_name is None or v.name == mutant.expect_name, said
