"""The generated tables agree with TLC on every state, edge and invariant verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aegis.cli import main
from aegis.conformance.mutants import by_name, mutated
from aegis.conformance.report import report_json, report_text
from aegis.conformance.session import Baseline, conform

SPEC = Path(__file__).resolve().parents[2] / "spec" / "AegisPhase.tla"
SMALL_CFG = Path(__file__).parent / "models" / "AegisPhase_maxretry1.cfg"


@pytest.mark.slow  # TLC and the generated tables over 97,622 states: ~3 min
def test_ci_model_conforms_state_for_state(main_baseline: Baseline) -> None:
    report = conform(main_baseline)
    graph = main_baseline.graph
    assert report.mismatches == []
    assert report.ok
    assert graph.distinct_states is not None and graph.distinct_states > 40_000
    assert report.states == graph.distinct_states == report.tlc_states
    assert report.edges == report.tlc_edges == graph.edge_count
    assert main_baseline.probes is not None and len(main_baseline.probes.states) > 5_000


def test_other_constants_bound_at_run_time(small_baseline: Baseline) -> None:
    model = small_baseline.bind()
    assert model.constants != small_baseline.package.CFG_CONSTANTS
    report = conform(small_baseline)
    assert report.ok, report_text(small_baseline.graph.variables, report)
    assert report.states == small_baseline.graph.distinct_states


def test_probes_falsify_every_invariant(small_baseline: Baseline) -> None:
    probes = small_baseline.probes
    assert probes is not None
    falsified = {name for holds in probes.holds for name in probes.predicates if name not in holds}
    assert falsified >= set(small_baseline.cfg.invariants)


def test_mismatch_names_state_action_and_both_sides(small_baseline: Baseline) -> None:
    with mutated(small_baseline.package, by_name("restartDone_seq_kept")) as package:
        report = conform(small_baseline, package, limit=3)
    assert not report.ok
    first = report.mismatches[0]
    assert (first.kind, first.action) == ("edges", "restartDone")
    assert first.state is not None and first.tlc and first.python
    assert set(first.tlc).isdisjoint(first.python)
    text = report_text(small_baseline.graph.variables, report)
    assert "action restartDone" in text and "TLC produced 1" in text and "Python produced 1" in text
    assert '/\\ phase = "Restarting"' in text and "masterSeq' = " in text
    js = report_json(small_baseline.graph.variables, report)
    assert js["mismatches"][0]["tlc"][0]["phase"] == '"Troubleshooting"'


def test_cli_reports_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["spec", "conform", "--config", str(SMALL_CFG), "--json", "--no-probes", str(SPEC)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["mismatches"] == [] and out["states"] == out["tlc_states"] > 1000
    assert {"states", "edges", "mismatches", "seconds"} <= set(out)
