"""The corpus (tests/codegen/corpus/): small specs in the classic shapes, written for this
project, each generated into a temp dir, imported, and compared with TLC's state graph (and
its invariant verdicts on near-miss probes) by the conformance machinery."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from aegis.conformance.compare import Report
from tools.tlc import check_translation
from tools.tlc.translation import has_pluscal

CORPUS = Path(__file__).parent / "corpus"

# Each model's distinct states, as TLC 2.15 counts them (pinned: a changed spec is seen).
STATES = {
    "Allocator": 64,
    "Barrier": 15,
    "BoundedQueue": 21,
    "Commit": 56,
    "Election": 24,
    "JugPuzzle": 16,
    "Mutex": 42,
    "Philosophers": 45,
}


# Run by default (one plain spec, one plain and one PlusCal spec with a named INSTANCE); the
# others take 3-10 s each here (two TLC runs and a translation) and are marked slow.
QUICK = {"JugPuzzle", "Barrier", "BoundedQueue"}


def _models() -> list[Path]:
    return sorted(CORPUS.glob("*.cfg"))


def _runs() -> list[object]:
    return [
        pytest.param(cfg, id=cfg.stem, marks=() if cfg.stem in QUICK else pytest.mark.slow)
        for cfg in _models()
    ]


def test_the_corpus_covers_the_shapes() -> None:
    specs = {cfg.stem: cfg.with_suffix(".tla").read_text(encoding="utf-8") for cfg in _models()}
    assert set(specs) == set(STATES)
    pluscal = {name for name, text in specs.items() if has_pluscal(text)}
    named = {name for name, text in specs.items() if re.search(r"== *INSTANCE\b", text)}
    unnamed = {name for name, text in specs.items() if re.search(r"^INSTANCE\b", text, re.M)}
    deadlock_off = {cfg.stem for cfg in _models() if "CHECK_DEADLOCK FALSE" in cfg.read_text()}
    assert len(pluscal) >= 3 and len(set(specs) - pluscal) >= 3
    assert named & pluscal and named - pluscal and unnamed
    assert deadlock_off


@pytest.mark.parametrize("cfg", _runs())
def test_generated_graph_equals_tlcs(
    cfg: Path, tmp_path: Path, conforms: Callable[..., Report]
) -> None:
    spec = cfg.with_suffix(".tla")
    check_translation(spec)  # a PlusCal spec's committed translation is current
    report = conforms(spec, tmp_path, cfg)
    assert report.ok, report.mismatches
    assert report.states == report.tlc_states == STATES[cfg.stem]
    assert report.edges == report.tlc_edges > 0
