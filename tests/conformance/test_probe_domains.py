"""Near-miss probes stay in the variables' domains, or are skipped with a note: conformance
gives a verdict on a spec whose variables are narrower than their type (issue 46)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aegis.conformance import probes
from aegis.conformance.session import baseline, conform
from aegis.conformance.tlcgraph import TlcGraph
from aegis.errors import SpecError
from codegen.pipeline import generate, load, write
from tools.tlc import TlcConfig

CORPUS = Path(__file__).parents[1] / "codegen" / "corpus"


def _graph(values: list[tuple[object, ...]]) -> TlcGraph:
    g = TlcGraph(("holder", "busy"))
    for key in values:
        g.index[key] = len(g.states)
        g.states.append(key)
        g.out.append(set())
    return g


def test_reachable_perturbations_stay_within_the_values_seen() -> None:
    g = _graph([(0, "idle"), (2, "busy")])
    wide = probes.perturbations(g.variables, g)
    narrow = probes.perturbations(g.variables, g, reachable=True)
    assert "{-1, 1, 2}}" in wide[0] and probes.ALIEN in wide[1]
    assert "\\in 0..2" in narrow[0] and probes.ALIEN not in narrow[1]


def test_probes_tlc_cannot_evaluate_are_skipped_with_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tried: list[tuple[tuple[str, ...], bool]] = []

    def fails(*args: object) -> probes.Probes:
        tried.append((args[6], args[7]))  # type: ignore[arg-type]
        raise SpecError("x.tla: TLC did not explore the whole state graph: Attempted to apply")

    monkeypatch.setattr(probes, "_run_probes", fails)
    cfg = TlcConfig(invariants=("TypeOK", "Safe"))
    found = probes.tlc_probes(Path("X.tla"), cfg, _graph([(0, "idle")]))
    # as perturbed, then within TypeOK, then within the reachable values: then none
    assert tried == [((), False), (("TypeOK",), False), ((), True)]
    assert found.states == () and found.note.startswith("no probe run")
    assert "Attempted to apply" in found.note


@pytest.mark.slow  # three TLC runs on the probes
def test_without_a_type_invariant_the_probes_keep_to_the_reachable_values(
    tmp_path: Path,
) -> None:
    for name in ("TokenRing.tla", "TokenRing.cfg"):
        shutil.copy(CORPUS / name, tmp_path / name)
    cfg = tmp_path / "TokenRing.cfg"
    cfg.write_text(cfg.read_text().replace("INVARIANTS TypeOK Safe", "INVARIANTS Safe"))
    spec = tmp_path / "TokenRing.tla"
    gen = generate(spec, phase_variable=None)
    write(gen, tmp_path / "out")
    base = baseline(spec, package=load(tmp_path / "out", gen.package))
    report = conform(base)
    assert report.ok, report.mismatches
    assert base.probes is not None and len(base.probes.states) > len(base.graph.states)
    assert report.notes and "within the values reachable states take" in report.notes[0]
