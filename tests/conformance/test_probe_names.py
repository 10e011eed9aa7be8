"""The probe module's names cannot collide with the spec's; a cfg's CHECK_DEADLOCK is honoured."""

from __future__ import annotations

from pathlib import Path

from aegis.conformance.probes import PREFIX, fresh_prefix
from aegis.conformance.session import baseline, conform
from codegen.pipeline import generate, load, write

MODELS = Path(__file__).parent / "models"


def test_the_prefix_grows_past_every_name_the_spec_uses() -> None:
    assert fresh_prefix(["VARIABLES x, b"]) == PREFIX
    assert fresh_prefix([f"VARIABLE {PREFIX}b", f"{PREFIX}_Init == TRUE"]) == PREFIX + "__"


def test_a_spec_with_the_probes_old_names_conforms(tmp_path: Path) -> None:
    spec = MODELS / "Clash.tla"  # defines b, p, d and has variables x, e, k
    gen = generate(spec, phase_variable=None)
    write(gen, tmp_path)
    base = baseline(spec, package=load(tmp_path, gen.package))
    assert base.cfg.check_deadlock is False  # else TLC stops at x = N: a deadlock
    assert len(base.graph.states) == 3
    report = conform(base)
    assert report.ok, report.mismatches
    assert base.probes is not None and len(base.probes.states) > 3
    assert any("TypeOK" not in holds for holds in base.probes.holds)  # perturbed e, k
