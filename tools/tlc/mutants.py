"""Spec mutants: re-introduce a known bug into a temp copy of a spec and model-check it."""

from __future__ import annotations

import re
import shutil
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aegis.errors import SpecError
from tools.tlc.result import TlcResult
from tools.tlc.runner import run_tlc
from tools.tlc.translation import translate


@dataclass(frozen=True)
class Mutant:
    """One bug as an exact text patch of the spec, and the violation TLC must report."""

    name: str
    seed_bug: str
    find: str
    replace: str
    expect_kind: str
    expect_name: str | None = None
    constants: dict[str, str] = field(default_factory=dict)


def load_mutants(path: Path | str) -> list[Mutant]:
    """The mutants listed in a TOML file (`[[mutant]]` tables)."""
    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    return [Mutant(**entry) for entry in data.get("mutant", [])]


TRANSLATION_MARK = "\\* BEGIN TRANSLATION"


def apply_patch(text: str, mutant: Mutant) -> str:
    """The spec with the patch applied to its source part (not the translation, redone after).

    SpecError unless the patch matches exactly once.
    """
    head, mark, tail = text.partition(TRANSLATION_MARK)
    count = head.count(mutant.find)
    if count != 1:
        raise SpecError(f"mutant {mutant.name}: its patch matches {count} places, expected 1")
    return head.replace(mutant.find, mutant.replace) + mark + tail


def override_constants(cfg_text: str, constants: dict[str, str]) -> str:
    """The cfg text with `NAME = value` lines replaced; SpecError for an unknown constant."""
    for name, value in constants.items():
        pattern = re.compile(rf"^(\s*{re.escape(name)}\s*=\s*).*$", re.MULTILINE)
        cfg_text, n = pattern.subn(lambda m: m.group(1) + value, cfg_text)  # noqa: B023
        if n != 1:
            raise SpecError(f"constant {name} is set {n} times in the cfg, expected once")
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
            override_constants(cfg.read_text(encoding="utf-8"), mutant.constants),
            encoding="utf-8",
        )
        yield dst, dst_cfg


def run_mutant(spec: Path | str, cfg: Path | str, mutant: Mutant) -> TlcResult:
    """Model-check the spec with the mutant's bug re-introduced, deterministically: one TLC
    worker (one search order, one counterexample) and liveness checked only once the search
    is done (`-lncheck final`). Otherwise TLC's periodic liveness checks race the search, and
    a stuck state is reported now as a deadlock, now as a violated Termination."""
    with mutated_copy(Path(spec), Path(cfg), mutant) as (mspec, mcfg):
        return run_tlc(mspec, mcfg, workers=1, extra_args=("-lncheck", "final"))
