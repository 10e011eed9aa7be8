"""Emitter, the agent's projection: what the agent's actions read, and those actions on its view.

An agent runs its own actions (`AGENT_ACTIONS`) bound to itself: the outer `\\E w \\in {x \\in
Workers : P(x)}` of each such action names the acting worker. The analysis walks the actions
(and the definitions they call) and sorts what they read:

- globals: variables that are not per-worker functions (sent to every agent);
- own / per-pod: per-worker functions (`[w \\in Workers |-> ...]` in Init) read only at the
  acting worker, split by whether the agent's actions write them (own: the agent keeps its
  copy) or not (per-pod: the controller sends each pod its entry);
- derived: 0-ary definitions that read per-worker functions at other workers (`Quiescent`,
  `Evicting`): the controller evaluates them on the full state and sends their values.

Anything else (a per-worker function read at another worker directly in an action, or by a
definition with parameters) cannot be projected: the generator refuses it with the place.
The module it emits (`agent_view.py`) holds the four lists and the agent's actions compiled
over a one-worker view (Workers = {the agent}) with the derived definitions as inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

from codegen import ir
from codegen.emit import HEADER
from codegen.errors import CodegenError
from codegen.pyenv import RESERVED, Env, Scope, py_name, python_names
from codegen.pyexpr import ExprCompiler
from codegen.pystmt import StepCompiler

AGENT_ACTIONS = ("agentWork", "agentHang", "agentCheckpoint", "agentEvict")
WORKERS = "Workers"
FILE = "agent_view.py"
_VALUES = ("Fn", "ModelValue", "apply", "domain", "except_", "fn")


@dataclass
class Reads:
    """What a formula reads and writes, sorted for the projection."""

    globals: set[str] = field(default_factory=set)
    local: set[str] = field(default_factory=set)  # per-worker, read at the acting worker only
    derived: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    nonlocal_at: list[tuple[str, ir.Loc]] = field(default_factory=list)  # (what, where)


@dataclass(frozen=True)
class Projection:
    """The result of the analysis for one spec."""

    actions: tuple[str, ...]
    actor: str  # the name of the choice naming the acting worker
    globals: tuple[str, ...]
    own: tuple[str, ...]
    per_pod: tuple[str, ...]
    derived: tuple[str, ...]


def emit_agent_view(spec: ir.Spec) -> dict[str, str]:
    """{"agent_view.py": source} for a spec with the agent's actions; {} for any other spec."""
    labels = {a.label for a in spec.actions}
    if WORKERS not in spec.module.constants or not set(AGENT_ACTIONS) <= labels:
        return {}
    proj = analyse(spec)
    return {FILE: _AgentViewEmitter(spec, proj).source()}


def per_worker_variables(spec: ir.Spec) -> frozenset[str]:
    """The variables Init sets to a function over Workers."""
    out = set()
    for e in _conjuncts(spec.init):
        if (
            isinstance(e, ir.Builtin)
            and e.op == "eq"
            and isinstance(e.args[0], ir.Var)
            and _is_function_over_workers(e.args[1])
        ):
            out.add(e.args[0].name)
    return frozenset(out)


def analyse(spec: ir.Spec) -> Projection:
    """The projection of the agent's actions (CodegenError where one cannot be made)."""
    per_worker = per_worker_variables(spec)
    total = Reads()
    actors = [_walk_action(spec, label, per_worker, total) for label in AGENT_ACTIONS]
    order = spec.module.variables
    local = [v for v in order if v in total.local]
    return Projection(
        actions=AGENT_ACTIONS,
        actor=actors[0],
        globals=tuple(v for v in order if v in total.globals),
        own=tuple(v for v in local if v in total.writes),
        per_pod=tuple(v for v in local if v not in total.writes),
        derived=tuple(sorted(total.derived)),
    )


def _walk_action(spec: ir.Spec, label: str, per_worker: frozenset[str], total: Reads) -> str:
    """Add the reads of the agent action `label` to `total`; the name of its acting worker."""
    action = next(a for a in spec.actions if a.label == label)
    binder = _actor_binder(action.body)
    if binder is None:
        raise CodegenError(
            f"agent action {label} does not start with \\E w \\in {{x \\in {WORKERS} : ...}}"
            " (or \\E w \\in Workers): the acting worker cannot be found",
            action.loc,
        )
    walker = _Walker(spec.module, per_worker, total)
    first, *rest = _conjuncts(action.body)
    assert isinstance(first, ir.Quant)
    walker.walk_actor(first, binder)
    for e in rest:
        walker.walk(e, frozenset())
    if total.nonlocal_at:
        what, where = total.nonlocal_at[0]
        raise CodegenError(
            f"agent action {label} reads {what} beyond the acting worker: it cannot be "
            "evaluated on the agent's one-worker view",
            where,
        )
    return binder.idents[0].name


class _Walker:
    """Collects the reads of one formula into a Reads."""

    def __init__(self, module: ir.Module, per_worker: frozenset[str], out: Reads) -> None:
        self.module = module
        self.per_worker = per_worker
        self.out = out
        self.def_cache: dict[str, Reads] = {}

    def walk(self, e: ir.Expr, acting: frozenset[int]) -> None:
        """Record what `e` reads; `acting`: uids of identifiers bound to the acting worker."""
        if self._walk_node(e, acting):
            return
        for child in ir.children(e):
            self.walk(child, acting)

    def _walk_node(self, e: ir.Expr, acting: frozenset[int]) -> bool:
        """Record what `e` itself reads; True when that covers its parts too."""
        if isinstance(e, ir.Var):
            self._var(e)
        elif isinstance(e, ir.Const) and e.name == WORKERS:
            self.out.nonlocal_at.append((WORKERS, e.loc))
        elif isinstance(e, ir.Let):
            for key in e.defs:
                self.walk(self.module.defs[key].body, acting)
        elif isinstance(e, ir.Builtin):
            return self._builtin(e, acting)
        elif isinstance(e, ir.Except) and self._per_worker(e.base):
            self._worker_except(e, acting)
            return True
        elif isinstance(e, ir.Call):
            self._call(e, acting)
            return True
        return False

    def _builtin(self, e: ir.Builtin, acting: frozenset[int]) -> bool:
        """UNCHANGED reads nothing; `v[w]` of a per-worker v is local at the acting worker."""
        if e.op == "unchanged":
            return True
        if e.op == "apply" and self._per_worker(e.args[0]):
            self._worker_apply(e, acting)
            return True
        return False

    def _worker_apply(self, e: ir.Builtin, acting: frozenset[int]) -> None:
        head = e.args[0]
        assert isinstance(head, ir.Var)
        if _is_acting(e.args[1], acting):
            self.out.local.add(head.name)
        else:
            self.out.nonlocal_at.append((f"{head.name}[...]", e.loc))
        self.walk(e.args[1], acting)

    def _worker_except(self, e: ir.Except, acting: frozenset[int]) -> None:
        """`[v EXCEPT ![w] = ...]` of a per-worker v: local when every update is at the actor."""
        assert isinstance(e.base, ir.Var)
        if all(path and _is_acting(path[0], acting) for path, _ in e.updates):
            self.out.local.add(e.base.name)
        else:
            self.out.nonlocal_at.append((f"{e.base.name} EXCEPT", e.loc))
        for path, value in e.updates:
            for p in path:
                self.walk(p, acting)
            self.walk(value, acting)

    def walk_actor(self, e: ir.Quant, binder: ir.Bound) -> None:
        """The action's `\\E w \\in {x \\in Workers : P(x)}`: P is read at x, the rest at w."""
        domain = binder.domain
        if isinstance(domain, ir.Quant) and domain.kind == "filter":
            self.walk(domain.body, frozenset(i.uid for i in domain.bounds[0].idents))
        ids = frozenset(i.uid for i in binder.idents)
        for b in e.bounds[1:]:
            self.walk(b.domain, ids)
        self.walk(e.body, ids)

    def _var(self, e: ir.Var) -> None:
        if e.primed:
            self.out.writes.add(e.name)
        elif e.name in self.per_worker:
            self.out.nonlocal_at.append((e.name, e.loc))
        else:
            self.out.globals.add(e.name)

    def _per_worker(self, e: ir.Expr) -> bool:
        return isinstance(e, ir.Var) and not e.primed and e.name in self.per_worker

    def _call(self, e: ir.Call, acting: frozenset[int]) -> None:
        for a in e.args:
            self.walk(a, acting)
        op = self.module.defs[e.op]
        if op.level == ir.CONSTANT_LEVEL:
            return
        inner_acting = frozenset(
            ident.uid for ident, a in zip(op.params, e.args, strict=True) if _is_acting(a, acting)
        )
        self._add_call_reads(op, self._def_reads(op, inner_acting), e)

    def _add_call_reads(self, op: ir.OpDef, reads: Reads, e: ir.Call) -> None:
        """Add a called definition's reads; one reading beyond the acting worker is derived
        (the controller sends its value) when it is a state-level constant-free name."""
        beyond = reads.nonlocal_at or reads.derived
        if beyond and not op.params and op.level == ir.STATE_LEVEL:
            self.out.derived.add(op.name)  # read over every worker: the controller sends it
            return
        if beyond:
            what = reads.nonlocal_at[0][0] if reads.nonlocal_at else min(reads.derived)
            self.out.nonlocal_at.append((f"{what} (through {op.name})", e.loc))
        self.out.globals |= reads.globals
        self.out.local |= reads.local
        self.out.writes |= reads.writes

    def _def_reads(self, op: ir.OpDef, acting: frozenset[int]) -> Reads:
        key = f"{op.key}/{sorted(acting)}"
        if key not in self.def_cache:
            reads = Reads()
            _Walker(self.module, self.per_worker, reads).walk(op.body, acting)
            self.def_cache[key] = reads
        return self.def_cache[key]


def _is_acting(e: ir.Expr, acting: frozenset[int]) -> bool:
    return isinstance(e, ir.Param) and e.ident.uid in acting


def _worker_binder(e: ir.Quant) -> ir.Bound | None:
    """The bound of `\\E w \\in Workers` / `\\E w \\in {x \\in Workers : P}`, if `e` is one."""
    b = e.bounds[0]
    if len(b.idents) != 1 or b.is_tuple:
        return None
    d = b.domain
    if isinstance(d, ir.Const) and d.name == WORKERS:
        return b
    if (
        isinstance(d, ir.Quant)
        and d.kind == "filter"
        and len(d.bounds) == 1
        and isinstance(d.bounds[0].domain, ir.Const)
        and d.bounds[0].domain.name == WORKERS
    ):
        return b
    return None


def _actor_binder(body: ir.Expr) -> ir.Bound | None:
    """The acting worker's binder: the first conjunct's \\E over the workers."""
    first = _conjuncts(body)[0]
    return _worker_binder(first) if isinstance(first, ir.Quant) else None


def _is_function_over_workers(e: ir.Expr) -> bool:
    return (
        isinstance(e, ir.Quant)
        and e.kind == "function"
        and len(e.bounds) == 1
        and isinstance(e.bounds[0].domain, ir.Const)
        and e.bounds[0].domain.name == WORKERS
    )


def _conjuncts(e: ir.Expr) -> list[ir.Expr]:
    if isinstance(e, ir.Builtin) and e.op == "and":
        return [x for a in e.args for x in _conjuncts(a)]
    return [e]


def substitute_calls(e: Any, idents: dict[str, ir.Ident]) -> Any:
    """`e` with every call of a derived definition replaced by a reference to its input."""
    if isinstance(e, ir.Call) and e.op in idents and not e.args:
        return ir.Param(e.loc, e.level, idents[e.op])
    if isinstance(e, tuple):
        return tuple(substitute_calls(x, idents) for x in e)
    if is_dataclass(e) and not isinstance(e, type):
        changes = {f.name: substitute_calls(getattr(e, f.name), idents) for f in fields(e)}
        return replace(e, **changes)
    return e


class _AgentViewEmitter:
    """Writes agent_view.py for one projection."""

    def __init__(self, spec: ir.Spec, proj: Projection) -> None:
        self.spec = spec
        self.proj = proj
        self.module = spec.module
        self.exprs = ExprCompiler(spec.module)
        self.def_names = {
            py_name(d.name)
            for k, d in self.module.defs.items()
            if "#" not in k and d.level <= ir.STATE_LEVEL
        }
        base = max(
            (i.uid for d in self.module.defs.values() for i in (*d.params, *_idents(d.body))),
            default=0,
        )
        base = max(base, *(i.uid for a in spec.actions for i in _idents(a.body)))
        self.inputs = {
            name: ir.Ident(name, base + 1 + n) for n, name in enumerate(self.proj.derived)
        }

    def source(self) -> str:
        bodies = [self.action(label) for label in self.proj.actions]
        lines = self.header(bodies) + self.tables() + self.derived()
        for label, body in bodies:
            lines += _action_lines(label, body)
        lines += [
            "",
            "",
            "# Label -> successors of the one-worker view (constants, view, derived, process id).",
            "AGENT_STEPS: dict[str, Callable[[Constants, State, Derived, Value], list[Successor]]]"
            " = {",
            *(f"    Label.{a}: successors_{a}," for a in self.proj.actions),
            "}",
            "",
        ]
        return "\n".join(lines)

    def header(self, bodies: list[tuple[str, str]]) -> list[str]:
        """The module's docstring and imports (of the names the action bodies use)."""
        used = python_names("\n".join(b for _, b in bodies))
        used |= {py_name(d) for d in self.proj.derived}
        defs_imports = sorted(self.def_names & used, key=_import_order)
        values = sorted({n for n in _VALUES if n in used} | {"Value"}, key=_import_order)
        lines = [
            HEADER.format(spec=self.module.path).rstrip("\n"),
            f'"""{self.module.name}: what the agent\'s actions read, and those actions on its'
            ' one-worker view."""',
            "",
            "from __future__ import annotations",
            "",
            "from collections.abc import Callable, Iterator",
            "from dataclasses import dataclass",
            "",
            f"from aegis.values import {', '.join(values)}",
            "",
            "from . import _tla",
        ]
        if defs_imports:
            lines.append(f"from .defs import {', '.join(defs_imports)}")
        return [*lines, "from .model import Constants, Label, State, Successor"]

    def tables(self) -> list[str]:
        """The projection's tables: the actions, the actor, and the variables by kind."""
        p = self.proj
        return [
            "",
            "# The agent's own actions, bound to the acting worker by the choice ACTOR.",
            f"AGENT_ACTIONS: tuple[Label, ...] = ({''.join(f'Label.{a}, ' for a in p.actions)})",
            f'ACTOR = "{p.actor}"',
            "# Variables that are not per worker, read by those actions: in every order.",
            f"GLOBALS: tuple[str, ...] = {_tuple(p.globals)}",
            "# Per-worker variables read at the acting worker only and written by the agent's",
            "# actions: the agent keeps its own entry.",
            f"OWN: tuple[str, ...] = {_tuple(p.own)}",
            "# Per-worker variables read at the acting worker only, not written by the agent:",
            "# the controller sends each pod its entry.",
            f"PER_POD: tuple[str, ...] = {_tuple(p.per_pod)}",
            "# Definitions the actions read over every worker: evaluated by the controller.",
            f"DERIVED: tuple[str, ...] = {_tuple(p.derived)}",
        ]

    def derived(self) -> list[str]:
        """The Derived record and derive(): DERIVED evaluated on the controller's state."""
        p = self.proj
        lines = [
            "",
            "",
            "@dataclass(frozen=True)",
            "class Derived:",
            '    """The values of DERIVED in one state of the whole job."""',
            "",
        ]
        lines += [f"    {name}: Value" for name in p.derived] or ["    pass"]
        lines += [
            "",
            "",
            "def derive(c: Constants, s: State) -> Derived:",
            '    """DERIVED evaluated on a state of the whole job (the controller\'s)."""',
            f"    return Derived({', '.join(f'{n}={py_name(n)}(c, s)' for n in p.derived)})",
        ]
        return lines

    def action(self, label: str) -> tuple[str, str]:
        a = next(x for x in self.spec.actions if x.label == label)
        scope = Scope(taken=set(RESERVED) | self.def_names | {"self", "d"})
        env = Env(self.module, scope)
        if a.self_param is not None:
            env = env.bind(a.self_param, "self")
        for name, ident in self.inputs.items():
            env = env.bind(ident, f"d.{name}")
        body = substitute_calls(a.body, self.inputs)
        lines = StepCompiler(self.module, self.exprs, init_mode=False).body(
            body, env, a.loc, a.label
        )
        return label, "\n".join("    " + line if line else line for line in lines)


def _action_lines(label: str, body: str) -> list[str]:
    """The generated successors_<label> and its generator _steps_<label> around `body`."""
    return [
        "",
        "",
        f"def successors_{label}(c: Constants, s: State, d: Derived, self: Value)"
        " -> list[Successor]:",
        f'    """Every successor of the one-worker view s by {label}."""',
        f"    return list(dict.fromkeys(_steps_{label}(c, s, d, self)))",
        "",
        "",
        f"def _steps_{label}(c: Constants, s: State, d: Derived, self: Value)"
        " -> Iterator[Successor]:",
        f'    """{label} with the derived definitions taken from d."""',
        body,
    ]


def _import_order(name: str) -> tuple[int, str, str]:
    """isort's order in one `from ... import`: CONSTANTS, Classes, functions."""
    group = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return group, name.lower(), name


def _tuple(names: tuple[str, ...]) -> str:
    return "(" + "".join(f'"{n}", ' for n in names) + ")"


def _idents(e: Any) -> list[ir.Ident]:
    """Every identifier in `e` (to pick uids that clash with none)."""
    if isinstance(e, ir.Ident):
        return [e]
    if isinstance(e, tuple):
        return [i for x in e for i in _idents(x)]
    if is_dataclass(e) and not isinstance(e, type):
        return [i for f in fields(e) for i in _idents(getattr(e, f.name))]
    return []
