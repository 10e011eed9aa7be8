"""One conformance session: TLC runs once (graph + probes), then any module is compared."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

from aegis.conformance.bound import BoundModel, bind, generated_module
from aegis.conformance.compare import Report, compare
from aegis.conformance.mutants import Mutant, mutated
from aegis.conformance.probes import Probes, compare_probes, tlc_probes
from aegis.conformance.tlcgraph import TlcGraph, dump_graph, load_cfg
from tools.tlc import TlcConfig


@dataclass
class Baseline:
    """What TLC says about one spec and cfg, read once and shared by every comparison."""

    spec: Path
    cfg: TlcConfig
    package: ModuleType
    graph: TlcGraph
    probes: Probes | None
    tlc_seconds: float

    def bind(self, package: ModuleType | None = None) -> BoundModel:
        """The (committed or given) generated package bound to the cfg's constants."""
        return bind(package or self.package, self.cfg)


def baseline(
    spec: Path,
    cfg: Path | None = None,
    *,
    package: ModuleType | None = None,
    probes: bool = True,
    probe_base: int = 100,
    deadlock: bool = True,
) -> Baseline:
    """Run TLC for the state graph (and, with `probes`, the near-miss verdicts); with
    `deadlock` False, a state with no successor is no error (as CHECK_DEADLOCK FALSE)."""
    start = time.monotonic()
    config = load_cfg(cfg or spec.with_suffix(".cfg"))
    if not deadlock:
        config = replace(config, check_deadlock=False)
    package = package or generated_module(spec.stem)
    variables = tuple(package.VARIABLES)
    graph = dump_graph(spec, config, variables)
    verdicts = tlc_probes(spec, config, graph, base=probe_base) if probes else None
    return Baseline(spec, config, package, graph, verdicts, time.monotonic() - start)


def conform(base: Baseline, package: ModuleType | None = None, *, limit: int = 20) -> Report:
    """Compare a generated package with TLC: the graph, then the probes' verdicts."""
    model = base.bind(package)
    report = compare(base.graph, model, max_mismatches=limit)
    if base.probes is not None and base.probes.note:
        report.notes.append(base.probes.note)
    if base.probes is not None and len(report.mismatches) < limit:
        start = time.monotonic()
        left = limit - len(report.mismatches)
        report.mismatches += compare_probes(base.probes, model, max_mismatches=left)
        report.seconds += time.monotonic() - start
    return report


@dataclass(frozen=True)
class Kill:
    """A mutant's fate: killed (by the first mismatch, or by failing to load) or survived."""

    mutant: Mutant
    killed: bool
    reason: str
    seconds: float


def kill(bases: list[Baseline], mutant: Mutant) -> Kill:
    """Run conformance on the mutant, model by model, until the first mismatch."""
    start = time.monotonic()
    with mutated(bases[0].package, mutant) as package:
        for base in bases:
            try:
                report = conform(base, package, limit=1)
            except Exception as exc:  # a mutant that cannot even be bound is caught too
                return Kill(mutant, True, f"{_name(base)}: error {exc!r}", _since(start))
            if not report.ok:
                first = report.mismatches[0] if report.mismatches else None
                why = f"{first.kind} {first.action or ''}" if first else "states unreached"
                return Kill(mutant, True, f"{_name(base)}: {why.strip()}", _since(start))
    return Kill(mutant, False, "survived", _since(start))


def _name(base: Baseline) -> str:
    """The cfg's file name."""
    return Path(base.cfg.where).name


def _since(start: float) -> float:
    return time.monotonic() - start
