"""The corpus (tests/codegen/corpus/): small specs in the classic shapes, written for this
project, each generated into a temp dir, imported, and compared with TLC's state graph (and
its invariant verdicts on near-miss probes) by the conformance machinery."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from aegis.conformance.compare import Report
from aegis.errors import AegisError
from codegen.pipeline import generate, load, package_name
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
    "Labelled": 5,
    "Mutex": 42,
    "Odometer": 4,
    "Override": 19,
    "Philosophers": 45,
    "Thermostat": 8,
    "TokenRing": 110,
}

# The actions each model has, named as TLC names them (issue 46: TLC's dot is the judge of
# every edge's label; these pin that each shape keeps the names it was written for).
LABELS = {
    "Thermostat": ["Heat", "Cool", "Hold", "Vent", "Next"],  # operators on state arguments
    "Odometer": ["UnnamedAction"],  # a SPECIFICATION seen through an unnamed INSTANCE
    "Labelled": ["Send", "Ack", "Next"],  # TLA+ labels are looked through
}

# Specs generation refuses, with the located message it must give (TLC refuses the last
# three too; the first is a limit of the generated Python).
REFUSED = {
    "InOut": r"InOut\.tla:7:11: rename in: it cannot be a Python attribute \(a Python keyword\)",
    "Spare": r"Spare\.tla:9:9: unbounded CHOOSE .* is not supported",
    "Gauge": (
        r"SANY rejected the spec:\n.*Gauge\.tla:9:1: Level error in instantiating module "
        r"'Counter': The level of the expression or operator substituted for 'Limit' must be "
        r"at most 0\."
    ),
    "Pair": r"Pair\.cfg:3: TLC refuses the value of Bounds: It was expecting = or <-",
}


# Run by default (one plain spec, one plain and one PlusCal spec with a named INSTANCE, and
# issue 46's shapes: operators on state arguments, an unnamed-INSTANCE wrapper; TokenRing,
# a variable bounded narrower than its type, by the probe test below); the others take 3-10 s
# each here (two TLC runs and a translation) and are marked slow.
QUICK = {"JugPuzzle", "Barrier", "BoundedQueue", "Thermostat", "Odometer"}


def _models() -> list[Path]:
    return sorted(cfg for cfg in CORPUS.glob("*.cfg") if cfg.stem not in REFUSED)


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
    refused = {cfg.stem for cfg in CORPUS.glob("*.cfg")} - set(specs)
    assert refused == set(REFUSED)


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
    if cfg.stem in LABELS:
        package = load(tmp_path, package_name(cfg.stem))
        assert list(package.ACTIONS) == LABELS[cfg.stem]


def test_probes_stay_in_a_domain_narrower_than_the_type(
    tmp_path: Path, conforms: Callable[..., Report]
) -> None:
    """TokenRing's `holder` is an integer in 0..N-1 that an invariant uses as an index: a
    probe of holder - 1 or holder + 1 beyond it is no state TLC can evaluate. The probes keep
    within TypeOK, say so, and still give verdicts."""
    spec = CORPUS / "TokenRing.tla"
    report = conforms(spec, tmp_path)
    assert report.ok, report.mismatches
    assert any("probes kept within TypeOK" in note for note in report.notes), report.notes


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_spec_tlc_or_python_cannot_take_is_refused_where_it_fails(
    name: str, tmp_path: Path
) -> None:
    spec = CORPUS / f"{name}.tla"
    with pytest.raises(AegisError, match=REFUSED[name]):
        generate(spec, phase_variable=None)


@pytest.mark.parametrize("name", ["Gauge", "Pair"])
def test_spec_gen_refuses_what_sany_or_tlc_refuses_and_writes_nothing(
    name: str, tmp_path: Path
) -> None:
    """A VARIABLE substituted for a CONSTANT (SANY's level check), a tuple in the cfg (TLC's
    cfg reader): `aegis spec gen` exits non-zero with their words and writes nothing."""
    spec = CORPUS / f"{name}.tla"
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "aegis.cli", "spec", "gen", str(spec), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert re.search(REFUSED[name], done.stderr + done.stdout), done.stderr
    assert not out.exists() or not any(out.iterdir())
