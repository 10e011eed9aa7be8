"""Near-miss probes: TLC's verdict on every invariant and constraint in states just off the graph.

A weakened invariant (say `<= MaxRetry + 1` made `<= MaxRetry + 2`) still holds on every
reachable state, so graph equality cannot see it. Probes can: take a sample of reachable
states, perturb one variable (or one entry of a function) at a time, type for type (an
integer by -1/+1/+2, a Boolean negated, a string replaced by another seen in that variable, a
set losing or gaining an element seen there), and have TLC itself evaluate each predicate in
each perturbed state. TLC does that in one run of a small spec that EXTENDS the model, has
the probes as its initial states and, for each predicate P, a stuttering action `Conform_P
== P /\\ UNCHANGED vars`: in the dot, state s has a self-loop labelled Conform_P iff P holds
in s. The generated predicates must give the same verdicts (compare_probes).
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from aegis.conformance.bound import BoundModel
from aegis.conformance.compare import Mismatch
from aegis.conformance.modelcfg import ModelConfig
from aegis.conformance.tlcgraph import Key, TlcGraph, dump_graph
from aegis.values import Fn, ModelValue, Value, render, sorted_values
from tools.tlc.workspace import used_modules

PREFIX = "Conform_"
POOL = 16  # at most this many candidate elements per set-valued variable
ALIEN = "ConformAlien"  # a string no variable takes: falsifies "x \\in Phases"-style predicates


@dataclass(frozen=True)
class Probes:
    """Perturbed states and, for each, the predicates TLC found true there."""

    predicates: tuple[str, ...]
    states: tuple[Key, ...]
    holds: tuple[frozenset[str], ...]


def sample(graph: TlcGraph, count: int, seed: int = 0) -> list[Key]:
    """A fixed pseudo-random sample of reachable states (all of them if fewer)."""
    nodes = sorted(
        random.Random(seed).sample(range(len(graph.states)), min(count, len(graph.states)))
    )
    return [graph.states[n] for n in nodes]


def perturbations(variables: Sequence[str], graph: TlcGraph) -> list[str]:
    """One TLA+ set expression over base record `b` per variable that can be perturbed."""
    out: list[str] = []
    for i, v in enumerate(variables):
        values = [s[i] for s in graph.states]
        out += _perturb(v, values)
    return out


def _perturb(v: str, values: list[Value]) -> list[str]:
    """The perturbations of variable v, from the kinds of values it takes."""
    if all(type(x) is int for x in values):
        return [f"{{[b EXCEPT !.{v} = @ + d] : d \\in {{-1, 1, 2}}}}"]
    if all(type(x) is bool for x in values):
        return [f"{{[b EXCEPT !.{v} = ~@]}}"]
    if all(type(x) is str for x in values):
        return [f"{{[b EXCEPT !.{v} = x] : x \\in {render(frozenset([*values, ALIEN]))}}}"]
    if all(isinstance(x, Fn) and x for x in values):
        return _perturb_fn(v, [y for x in values for y in x.values()])
    if all(isinstance(x, frozenset) for x in values):
        pool = sorted_values({e for x in values for e in x})[:POOL]
        return [
            f"{{[b EXCEPT !.{v} = @ \\ {{e}}] : e \\in b.{v}}}",
            f"{{[b EXCEPT !.{v} = @ \\cup {{e}}] : e \\in {render(frozenset(pool))}}}",
        ]
    return []


def _perturb_fn(v: str, entries: list[Value]) -> list[str]:
    """Perturb one entry of a function-valued variable."""
    at = f"k \\in DOMAIN b.{v}"
    if all(type(x) is int for x in entries):
        return [f"{{[b EXCEPT !.{v}[k] = @ + d] : {at}, d \\in {{-1, 1, 2}}}}"]
    if all(type(x) is bool for x in entries):
        return [f"{{[b EXCEPT !.{v}[k] = ~@] : {at}}}"]
    if all(type(x) is str for x in entries):
        return [
            f"{{[b EXCEPT !.{v}[k] = x] : {at}, x \\in {render(frozenset([*entries, ALIEN]))}}}"
        ]
    return []


def model_values(keys: Iterable[Key]) -> set[str]:
    """The names of the model values that occur in these states."""
    found: set[str] = set()

    def walk(x: Value) -> None:
        if isinstance(x, ModelValue):
            found.add(x.name)
        elif isinstance(x, frozenset | tuple):
            for y in x:
                walk(y)
        elif isinstance(x, Fn):
            for k, y in x.items():
                walk(k)
                walk(y)

    for key in keys:
        walk(key)
    return found


def probe_module(
    name: str,
    spec_module: str,
    variables: Sequence[str],
    base: list[Key],
    sets: list[str],
    predicates: Sequence[str],
    mvs: set[str],
) -> str:
    """The text of the probe spec (see the module docstring)."""
    records = ",\n    ".join(
        "[" + ", ".join(f"{v} |-> {render(x)}" for v, x in zip(variables, key, strict=True)) + "]"
        for key in base
    )
    unchanged = "<<" + ", ".join(variables) + ">>"
    lines = [f"---- MODULE {name} ----", f"EXTENDS {spec_module}, Integers, TLC"]
    lines += [f"CONSTANTS {', '.join(sorted(mvs))}"] if mvs else []
    lines += [f"{PREFIX}Base == {{\n    {records}\n}}"]
    lines += [f"{PREFIX}Perturb(b) ==\n    " + "\n    \\cup ".join(sets or ["{b}"])]
    lines += [f"{PREFIX}Init == \\E b \\in {PREFIX}Base : \\E p \\in {PREFIX}Perturb(b) :"]
    lines += [f"    /\\ {v} = p.{v}" for v in variables]
    lines += [f"{PREFIX}{p} == {p} /\\ UNCHANGED {unchanged}" for p in predicates]
    lines += [f"{PREFIX}Next == " + " \\/ ".join(f"{PREFIX}{p}" for p in predicates)]
    return "\n".join(lines) + "\n===="


def probe_cfg(cfg: ModelConfig, mvs: set[str]) -> str:
    """The probe spec's cfg: the model's constants, the probes' model values, no checks."""
    lines = [f"INIT {PREFIX}Init", f"NEXT {PREFIX}Next", "CONSTANTS"]
    lines += [f"    {k} = {v}" for k, v in cfg.config.constants.items()]
    lines += [f"    {m} = {m}" for m in sorted(mvs)]
    return "\n".join(lines) + "\n"


def tlc_probes(
    spec: Path, cfg: ModelConfig, graph: TlcGraph, *, base: int = 100, seed: int = 0
) -> Probes:
    """Run TLC once on the probe spec and read its verdicts."""
    predicates = (*cfg.invariants, *cfg.constraints)
    keys = sample(graph, base, seed)
    mvs = model_values(keys) - set(cfg.config.constants)
    name = f"{spec.stem}ConformProbe"
    text = probe_module(
        name,
        spec.stem,
        graph.variables,
        keys,
        perturbations(graph.variables, graph),
        predicates,
        mvs,
    )
    with tempfile.TemporaryDirectory(prefix="aegis-probe-") as tmp:
        for module, path in used_modules(spec).items():
            shutil.copyfile(path, Path(tmp) / f"{module}.tla")
        probe = Path(tmp) / f"{name}.tla"
        probe.write_text(text, encoding="utf-8")
        g = dump_graph(
            probe, cfg, graph.variables, extra_args=("-deadlock",), cfg_text=probe_cfg(cfg, mvs)
        )
    holds = tuple(
        frozenset(label.removeprefix(PREFIX) for label, dst in g.out[n] if dst == n)
        for n in range(len(g.states))
    )
    return Probes(predicates, tuple(g.states), holds)


def compare_probes(
    probes: Probes, model: BoundModel, *, max_mismatches: int = 20
) -> list[Mismatch]:
    """Every probe whose generated verdict on some predicate differs from TLC's."""
    checks = {**model.invariants, **model.constraints}
    out: list[Mismatch] = []
    for key, holds in zip(probes.states, probes.holds, strict=True):
        state = model.state(key)
        for name in probes.predicates:
            try:
                verdict: object = checks[name](model.constants, state)
            except Exception as exc:
                verdict = exc
            if verdict != (name in holds):
                tlc = "holds" if name in holds else "violated"
                py = (
                    repr(verdict)
                    if isinstance(verdict, Exception)
                    else ("holds" if verdict else "violated")
                )
                out.append(Mismatch("verdict", key, name, detail=f"TLC: {tlc}; Python: {py}"))
                if len(out) >= max_mismatches:
                    return out
    return out
