"""Every promise the spec states is checked by TLC in every model and documented in spec/README."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools.tlc import read_cfg

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec" / "AegisPhase.tla"
README = ROOT / "spec" / "README.md"
CFGS = sorted((ROOT / "spec").glob("*.cfg"))


def _promises() -> list[str]:
    """The definitions in the spec's promise section (before the translation)."""
    source = SPEC.read_text(encoding="utf-8").partition("\\* BEGIN TRANSLATION")[0]
    section = source.partition("the promises users rely on")[2].partition("state constraint")[0]
    helpers = {"CountedFailure", "RetriesAligned", "FailureWrappedUp"}
    names = re.findall(r"^    ([A-Z]\w*) ==", section, re.MULTILINE)
    return [n for n in names if n not in helpers]


def test_the_promise_section_is_found() -> None:
    assert len(_promises()) >= 10


@pytest.mark.parametrize("cfg", CFGS, ids=[c.name for c in CFGS])
def test_every_model_checks_every_promise(cfg: Path) -> None:
    config = read_cfg(cfg)
    checked = set(config.invariants) | set(config.properties)
    assert set(_promises()) <= checked, sorted(set(_promises()) - checked)


def test_the_readme_says_what_each_promise_pins() -> None:
    readme = README.read_text(encoding="utf-8")
    rows = {m.group(1) for m in re.finditer(r"^\| `(\w+)` \|", readme, re.MULTILINE)}
    config = read_cfg(ROOT / "spec" / "AegisPhase.cfg")
    assert set(config.invariants) | set(config.properties) <= rows


def test_spec_readme_counts_what_tlc_checks() -> None:
    """spec/README.md counts the CI model's invariants and action properties as its cfg has
    them (README.md's count is tests/test_docs.py's)."""
    config = read_cfg(ROOT / "spec" / "AegisPhase.cfg")
    actions = [p for p in config.properties if p != "Termination"]
    spec_readme = " ".join(README.read_text(encoding="utf-8").split())
    assert f"{len(config.invariants)} invariants, `Termination` and {len(actions)} action" in (
        spec_readme
    )
