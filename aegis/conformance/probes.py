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

A perturbed value may lie outside the variable's domain (a token position one past the
last node), where TLC cannot evaluate a predicate at all (`f[x]` outside DOMAIN f) and
gives no verdict. The probes then stay in the domain: first those the spec's type
invariant (a cfg INVARIANT named Type..., e.g. TypeOK) admits, else those whose values lie
within what each variable (each entry of a function) takes in the reachable states; if TLC
still cannot evaluate them, no probe is run and `Probes.note` says why.
"""

from __future__ import annotations

import random
import re
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from aegis.conformance.bound import BoundModel
from aegis.conformance.compare import Mismatch
from aegis.conformance.tlcgraph import Key, TlcGraph, dump_graph
from aegis.errors import SpecError
from aegis.values import Fn, ModelValue, Value, render, sorted_values
from tools.tlc import TlcConfig, render_cfg
from tools.tlc.workspace import used_modules

PREFIX = "Conform_"  # the probe module's names; made longer while the spec uses any like it
POOL = 16  # at most this many candidate elements per set-valued variable
ALIEN = "ConformAlien"  # a string no variable takes: falsifies "x \\in Phases"-style predicates


@dataclass(frozen=True)
class Probes:
    """Perturbed states and, for each, the predicates TLC found true there; `note`: how
    the probes were kept in the variables' domains, or why none was run."""

    predicates: tuple[str, ...]
    states: tuple[Key, ...]
    holds: tuple[frozenset[str], ...]
    note: str = ""


def sample(graph: TlcGraph, count: int, seed: int = 0) -> list[Key]:
    """A fixed pseudo-random sample of reachable states (all of them if fewer)."""
    nodes = sorted(
        random.Random(seed).sample(range(len(graph.states)), min(count, len(graph.states)))
    )
    return [graph.states[n] for n in nodes]


def fresh_prefix(texts: Iterable[str]) -> str:
    """PREFIX, lengthened until no identifier in `texts` (the spec's modules) starts with it:
    every name of the probe module starts with it, so none can collide with the spec's."""
    words = {w for text in texts for w in re.findall(r"\w+", text)}
    prefix = PREFIX
    while any(w.startswith(prefix) for w in words):
        prefix += "_"
    return prefix


def perturbations(
    variables: Sequence[str], graph: TlcGraph, prefix: str = PREFIX, *, reachable: bool = False
) -> list[str]:
    """One TLA+ set expression over the base record `<prefix>b` per variable that can be
    perturbed; every name it binds starts with `prefix`. With `reachable`, only to values
    within those the variable (a function's entries) takes in the reachable states."""
    n = _names(prefix)
    out: list[str] = []
    for i, v in enumerate(variables):
        values = [s[i] for s in graph.states]
        out += _perturb(v, values, n, reachable)
    return out


class _Names(NamedTuple):
    """The probe module's bound names: a base record, a perturbed one, an integer delta, a
    function's key, a string and a set element (each PREFIX + letter)."""

    b: str
    p: str
    d: str
    k: str
    x: str
    e: str


def _names(prefix: str) -> _Names:
    return _Names(*(prefix + letter for letter in _Names._fields))


def _perturb(v: str, values: list[Value], n: _Names, reachable: bool) -> list[str]:
    """The perturbations of variable v, from the kinds of values it takes."""
    scalar = _perturb_scalar(f".{v}", None, values, n, reachable)
    if scalar is not None:
        return scalar
    if all(isinstance(y, Fn) and y for y in values):
        return _perturb_fn(v, [z for y in values for z in y.values()], n, reachable)
    if all(isinstance(y, frozenset) for y in values):
        return _perturb_set(v, values, n)
    return []


def _perturb_set(v: str, values: list[Value], n: _Names) -> list[str]:
    """Remove an element of a set-valued variable, or add one it has held (up to POOL)."""
    b, e = n.b, n.e
    pool = sorted_values({z for y in values for z in y})[:POOL]
    return [
        f"{{[{b} EXCEPT !.{v} = @ \\ {{{e}}}] : {e} \\in {b}.{v}}}",
        f"{{[{b} EXCEPT !.{v} = @ \\cup {{{e}}}] : {e} \\in {render(frozenset(pool))}}}",
    ]


def _perturb_fn(v: str, entries: list[Value], n: _Names, reachable: bool) -> list[str]:
    """Perturb one entry of a function-valued variable."""
    at = f"{n.k} \\in DOMAIN {n.b}.{v}"
    return _perturb_scalar(f".{v}[{n.k}]", at, entries, n, reachable) or []


def _perturb_scalar(
    sel: str, bound: str | None, values: list[Value], n: _Names, reachable: bool
) -> list[str] | None:
    """The perturbation of `b{sel}` (a variable, or one entry under `bound`) when its values
    are all integers (a small step), all Booleans (negated) or all strings (another one);
    None for other values."""
    kind = _scalar_type(values)
    if kind is None:
        return None
    b, d, x = n.b, n.d, n.x
    if kind is bool:
        return [f"{{[{b} EXCEPT !{sel} = ~@]{f' : {bound}' if bound else ''}}}"]
    pre = f"{bound}, " if bound else ""
    if kind is int:
        deltas = _deltas(f"{b}{sel}", values, n) if reachable else "{-1, 1, 2}"
        return [f"{{[{b} EXCEPT !{sel} = @ + {d}] : {pre}{d} \\in {deltas}}}"]
    strings = frozenset(values) if reachable else frozenset([*values, ALIEN])
    return [f"{{[{b} EXCEPT !{sel} = {x}] : {pre}{x} \\in {render(strings)}}}"]


def _scalar_type(values: list[Value]) -> type | None:
    """int, bool or str when every value is of that type (int for none), else None."""
    for kind in (int, bool, str):
        if all(type(y) is kind for y in values):
            return kind
    return None


def _deltas(at: str, values: Sequence[Value], n: _Names) -> str:
    """The deltas of -1, 1, 2 that keep the integer `at` within the reachable values'
    range (min..max)."""
    ints = [y for y in values if type(y) is int]
    lo, hi = min(ints), max(ints)
    return f"{{{n.e} \\in {{-1, 1, 2}} : {at} + {n.e} \\in {lo}..{hi}}}"


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
    prefix: str = PREFIX,
    within: Sequence[str] = (),
) -> str:
    """The text of the probe spec (see the module docstring); `sets` are perturbations();
    `within`: state predicates every probe must satisfy (the spec's type invariant)."""
    records = ",\n    ".join(
        "[" + ", ".join(f"{v} |-> {render(x)}" for v, x in zip(variables, key, strict=True)) + "]"
        for key in base
    )
    unchanged = "<<" + ", ".join(variables) + ">>"
    lines = [f"---- MODULE {name} ----", f"EXTENDS {spec_module}, Integers, TLC"]
    lines += [f"CONSTANTS {', '.join(sorted(mvs))}"] if mvs else []
    b, p = _names(prefix)[:2]
    lines += [f"{prefix}Base == {{\n    {records}\n}}"]
    lines += [f"{prefix}Perturb({b}) ==\n    " + "\n    \\cup ".join(sets or [f"{{{b}}}"])]
    first = f"{prefix}Probed" if within else f"{prefix}Init"
    lines += [f"{first} == \\E {b} \\in {prefix}Base : \\E {p} \\in {prefix}Perturb({b}) :"]
    lines += [f"    /\\ {v} = {p}.{v}" for v in variables]
    lines += [f"{prefix}Init == {first} /\\ " + " /\\ ".join(within)] if within else []
    lines += [f"{prefix}{q} == {q} /\\ UNCHANGED {unchanged}" for q in predicates]
    lines += [f"{prefix}Next == " + " \\/ ".join(f"{prefix}{q}" for q in predicates)]
    return "\n".join(lines) + "\n===="


def probe_cfg(cfg: TlcConfig, mvs: set[str], prefix: str = PREFIX) -> str:
    """The probe spec's cfg: the model's constants, the probes' model values, no checks."""
    constants = {**cfg.constants, **{m: m for m in sorted(mvs)}}
    return render_cfg(TlcConfig(init=f"{prefix}Init", next=f"{prefix}Next", constants=constants))


def tlc_probes(
    spec: Path, cfg: TlcConfig, graph: TlcGraph, *, base: int = 100, seed: int = 0
) -> Probes:
    """Run TLC on the probe spec and read its verdicts: the probes as perturbed, else kept
    in the variables' domains (the type invariant, else the reachable values), else none
    (see the module docstring)."""
    predicates = (*cfg.invariants, *cfg.constraints)
    if not predicates:  # nothing to probe (the probe module's Next would be empty)
        return Probes((), (), ())
    types = tuple(name for name in cfg.invariants if name.startswith("Type"))
    tries: list[tuple[str, tuple[str, ...], bool]] = [("", (), False)]
    if types:
        tries.append((f"probes kept within {' and '.join(types)}", types, False))
    tries.append(("probes kept within the values reachable states take", (), True))
    failures: list[str] = []
    for note, within, reachable in tries:
        try:
            found = _run_probes(spec, cfg, graph, predicates, base, seed, within, reachable)
        except SpecError as exc:
            failures.append(_first_line(str(exc)))
            continue
        if failures:
            note = f"{note} (TLC could not evaluate every predicate in the probes: {failures[0]})"
        return replace(found, note=note)
    why = f"no probe run: TLC could not evaluate the predicates in them ({failures[-1]})"
    return Probes(predicates, (), (), why)


def _run_probes(
    spec: Path,
    cfg: TlcConfig,
    graph: TlcGraph,
    predicates: tuple[str, ...],
    base: int,
    seed: int,
    within: Sequence[str],
    reachable: bool,
) -> Probes:
    """One TLC run of the probe spec."""
    keys = sample(graph, base, seed)
    mvs = model_values(keys) - set(cfg.constants)
    modules = used_modules(spec)
    prefix = fresh_prefix(path.read_text(encoding="utf-8") for path in modules.values())
    name = f"{prefix}Probe"
    sets = perturbations(graph.variables, graph, prefix, reachable=reachable)
    text = probe_module(
        name, spec.stem, graph.variables, keys, sets, predicates, mvs, prefix, within
    )
    with tempfile.TemporaryDirectory(prefix="aegis-probe-") as tmp:
        for module, path in modules.items():
            shutil.copyfile(path, Path(tmp) / f"{module}.tla")
        probe = Path(tmp) / f"{name}.tla"
        probe.write_text(text, encoding="utf-8")
        probes_cfg = probe_cfg(cfg, mvs, prefix)
        g = dump_graph(probe, cfg, graph.variables, extra_args=("-deadlock",), cfg_text=probes_cfg)
    holds = tuple(
        frozenset(label.removeprefix(prefix) for label, dst in g.out[n] if dst == n)
        for n in range(len(g.states))
    )
    return Probes(predicates, tuple(g.states), holds)


def _first_line(text: str) -> str:
    """TLC's complaint in one line: from its `Attempted to ...` (or its first line) up to
    the positions it lists."""
    flat = " ".join(text.split())
    start = flat.find("Attempted")
    if start < 0:
        return flat.partition(": TLC did not explore the whole state graph: ")[2][:200] or flat
    return flat[start:].partition(" The error occurred")[0].removeprefix(": ")


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
