"""Derive the phase machine statically: which label moves the phase variable from X to Y.

Each label's formula is split into paths (disjunctions, IF/CASE arms, \\E bodies); a path is
feasible from phase X unless one of its guards is definitely FALSE when only the phase variable
(= X) and the cfg's constants are known. Its assignment `phase' = e` (or `phase' \\in S`) must
evaluate to known values there; otherwise generation fails, naming the assignment.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from aegis.values import Value, sorted_values
from codegen import ir
from codegen.errors import CodegenError

MAX_PATHS = 4096
MAX_VALUES = 256
AVal = frozenset[Value] | None  # the possible values; None = unknown
BOOL: frozenset[Value] = frozenset({True, False})


@dataclass(frozen=True, slots=True)
class _Thunk:
    expr: ir.Expr
    env: _Env


_Env = dict[int, _Thunk]


@dataclass(frozen=True, slots=True)
class _Path:
    guards: tuple[tuple[ir.Expr, _Env, bool], ...] = ()
    assign: tuple[str, ir.Expr | None, _Env] | None = None


def derive(spec: ir.Spec, variable: str) -> ir.PhaseMachine:
    """The phase machine of `variable`, explored from Init's value(s) of it."""
    return _Deriver(spec, variable).run()


class _Deriver:
    def __init__(self, spec: ir.Spec, variable: str) -> None:
        self.spec = spec
        self.defs = spec.module.defs
        self.var = variable
        self.consts = spec.constants

    def run(self) -> ir.PhaseMachine:
        initial = self.initial()
        seen: list[Value] = [initial]
        transitions: list[tuple[str, Value, Value]] = []
        action_paths = [(a, self.paths(a.body, {}, init=False)) for a in self.spec.actions]
        i = 0
        while i < len(seen):
            x = seen[i]
            i += 1
            for action, paths in action_paths:
                for path in paths:
                    if not self.feasible(path, x):
                        continue
                    for y in sorted_values(self.targets(path, x, action)):
                        if y != x and (action.label, x, y) not in transitions:
                            transitions.append((action.label, x, y))
                        if y not in seen:
                            seen.append(y)
        return ir.PhaseMachine(self.var, tuple(seen), initial, tuple(transitions))

    def initial(self) -> Value:
        values: set[Value] = set()
        for path in self.paths(self.spec.init, {}, init=True):
            if self.feasible(path, None):
                values |= self.targets(path, None, None)
        if len(values) != 1:
            shown = ", ".join(map(repr, sorted_values(values)))
            raise CodegenError(f"Init must give {self.var} exactly one value (found: {shown})")
        return values.pop()

    # -- paths ----------------------------------------------------------------------------

    def paths(self, e: ir.Expr, env: _Env, init: bool) -> list[_Path]:
        """The paths through formula `e` (only action-level structure is split)."""
        target = self._target(e, init)
        if target is not None:
            kind, rhs = target
            return [_Path(assign=(kind, rhs, env))]
        if e.level < (ir.STATE_LEVEL if init else ir.ACTION_LEVEL):
            return [_Path(guards=((e, env, True),))]
        return self.split(e, env, init)

    def split(self, e: ir.Expr, env: _Env, init: bool) -> list[_Path]:
        """The paths through an action-level formula, split at its connectives."""
        if isinstance(e, ir.Builtin) and e.op in ("and", "or"):
            return self.connective_paths(e, env, init)
        if isinstance(e, ir.If):
            return self.if_paths(e, env, init)
        if isinstance(e, ir.Case):
            return self.case_paths(e, env, init)
        if isinstance(e, ir.Let) or (isinstance(e, ir.Quant) and e.kind == "exists"):
            return self.paths(e.body, env, init)
        if isinstance(e, ir.Call):
            return self.paths(*self.call_body(e, env), init)
        return [_Path(guards=((e, env, True),))]

    def connective_paths(self, e: ir.Builtin, env: _Env, init: bool) -> list[_Path]:
        """`or`: the paths of each part; `and`: each combination of one path per part."""
        if e.op == "or":
            return [p for part in e.args for p in self.paths(part, env, init)]
        out = [_Path()]
        for part in e.args:
            out = [_join(p, q) for p in out for q in self.paths(part, env, init)]
            if len(out) > MAX_PATHS:
                raise CodegenError("too many paths to derive the phase machine", e.loc)
        return out

    def if_paths(self, e: ir.If, env: _Env, init: bool) -> list[_Path]:
        yes = [
            _join(_Path(guards=((e.cond, env, True),)), p) for p in self.paths(e.then, env, init)
        ]
        no = [
            _join(_Path(guards=((e.cond, env, False),)), p) for p in self.paths(e.other, env, init)
        ]
        return yes + no

    def call_body(self, e: ir.Call, env: _Env) -> tuple[ir.Expr, _Env]:
        """The called definition's body and the env binding its parameters to the arguments."""
        op = self.defs[e.op]
        inner = dict(env) | {p.uid: _Thunk(a, env) for p, a in zip(op.params, e.args, strict=True)}
        return op.body, inner

    def case_paths(self, e: ir.Case, env: _Env, init: bool) -> list[_Path]:
        out: list[_Path] = []
        before: tuple[tuple[ir.Expr, _Env, bool], ...] = ()
        for cond, value in e.arms:
            head = _Path(guards=(*before, (cond, env, True)))
            out += [_join(head, p) for p in self.paths(value, env, init)]
            before = (*before, (cond, env, False))
        if e.other is not None:
            out += [_join(_Path(guards=before), p) for p in self.paths(e.other, env, init)]
        return out

    def _target(self, e: ir.Expr, init: bool) -> tuple[str, ir.Expr | None] | None:
        """An assignment to the phase variable: ("eq", rhs), ("in", set) or ("unchanged", None)."""
        if isinstance(e, ir.Builtin) and e.op in ("eq", "in"):
            lhs = e.args[0]
            if isinstance(lhs, ir.Var) and lhs.name == self.var and lhs.primed != init:
                return e.op, e.args[1]
        if (
            not init
            and isinstance(e, ir.Builtin)
            and e.op == "unchanged"
            and self.var in self._unchanged_vars(e.args[0])
        ):
            return "unchanged", None
        return None

    def _unchanged_vars(self, e: ir.Expr) -> list[str]:
        if isinstance(e, ir.Var):
            return [e.name]
        if isinstance(e, ir.Builtin) and e.op == "tuple":
            return [v for a in e.args for v in self._unchanged_vars(a)]
        if isinstance(e, ir.Call) and not e.args:
            return self._unchanged_vars(self.defs[e.op].body)
        return []

    # -- evaluation -----------------------------------------------------------------------

    def feasible(self, path: _Path, phase: Value | None) -> bool:
        for expr, env, positive in path.guards:
            got = self.eval(expr, env, phase)
            if got is not None and positive not in got:
                return False
        return True

    def targets(self, path: _Path, phase: Value | None, action: ir.Action | None) -> set[Value]:
        where = action.loc if action else None
        if path.assign is None:
            raise CodegenError(f"a path does not assign {self.var}", where)
        kind, rhs, env = path.assign
        if kind == "unchanged":
            return {phase}
        assert rhs is not None
        got = self.eval(rhs, env, phase)
        if got is not None and kind == "in":
            got = _union_of(got)
        if got is None:
            raise CodegenError(
                f"cannot derive the phase machine: the value assigned to {self.var} "
                f"is not determined by {self.var} and the constants",
                rhs.loc,
            )
        return set(got)

    def eval(self, e: ir.Expr, env: _Env, phase: Value | None) -> AVal:
        """The possible values of `e` when the phase variable is `phase` (None: unknown)."""
        if isinstance(e, ir.Lit | ir.Var | ir.Const | ir.Param):
            return self.eval_leaf(e, env, phase)
        if isinstance(e, ir.Call):
            return self.eval(*self.call_body(e, env), phase)
        if isinstance(e, ir.Let):
            return self.eval(e.body, env, phase)
        if isinstance(e, ir.If):
            return self.eval_case(((e.cond, e.then),), e.other, env, phase)
        if isinstance(e, ir.Case):
            return self.eval_case(e.arms, e.other, env, phase)
        if isinstance(e, ir.Builtin):
            return self.eval_builtin(e, env, phase)
        return None

    def eval_leaf(
        self, e: ir.Lit | ir.Var | ir.Const | ir.Param, env: _Env, phase: Value | None
    ) -> AVal:
        if isinstance(e, ir.Lit):
            return frozenset({e.value})
        if isinstance(e, ir.Var):
            known = e.name == self.var and not e.primed and phase is not None
            return frozenset({phase}) if known else None
        if isinstance(e, ir.Const):
            return frozenset({self.consts[e.name]}) if e.name in self.consts else None
        thunk = env.get(e.ident.uid)
        return None if thunk is None else self.eval(thunk.expr, thunk.env, phase)

    def eval_case(
        self,
        arms: tuple[tuple[ir.Expr, ir.Expr], ...],
        other: ir.Expr | None,
        env: _Env,
        phase: Value | None,
    ) -> AVal:
        result: set[Value] = set()
        for cond, value in arms:
            c = self.eval(cond, env, phase)
            if c is not None and True not in c:
                continue
            v = self.eval(value, env, phase)
            if v is None:
                return None
            result |= v
            if c == frozenset({True}):
                return frozenset(result)
        if other is not None:
            v = self.eval(other, env, phase)
            if v is None:
                return None
            result |= v
        return frozenset(result)

    def eval_builtin(self, e: ir.Builtin, env: _Env, phase: Value | None) -> AVal:
        args = [self.eval(a, env, phase) for a in e.args]
        if e.op in ("and", "or"):
            return _eval_connective(e.op == "or", args)
        fn = _CONCRETE.get(e.op)
        if fn is None or any(a is None for a in args):
            return BOOL if e.op in _BOOLEAN_OPS else None
        return _apply_to_all(fn, args)


def _eval_connective(stop: bool, args: list[AVal]) -> AVal:
    """`and` (stop False) or `or` (stop True) of operands with these possible values."""
    bools = [BOOL if a is None else a for a in args]
    if any(b == frozenset({stop}) for b in bools):
        return frozenset({stop})
    if all(b == frozenset({not stop}) for b in bools):
        return frozenset({not stop})
    return BOOL


def _apply_to_all(fn: Callable[..., Value], args: list[AVal]) -> AVal:
    """`fn` of every combination of the operands' values (None: too many, or not defined)."""
    combos = list(itertools.product(*[sorted_values(a or ()) for a in args]))
    if len(combos) > MAX_VALUES:
        return None
    try:
        return frozenset(fn(*combo) for combo in combos)
    except (TypeError, KeyError):
        return None


def _join(p: _Path, q: _Path) -> _Path:
    """Path p followed by q (a second `phase' = e` only tests phase', which is unknown)."""
    return _Path(p.guards + q.guards, p.assign or q.assign)


def _union_of(sets: frozenset[Value]) -> AVal:
    out: set[Value] = set()
    for s in sets:
        if not isinstance(s, frozenset):
            return None
        out |= s
    return frozenset(out)


_BOOLEAN_OPS = frozenset(
    {"not", "implies", "equiv", "eq", "neq", "in", "notin", "lt", "gt", "le", "ge", "subseteq"}
)
_CONCRETE: dict[str, Callable[..., Value]] = {
    "not": lambda a: not a,
    "implies": lambda a, b: (not a) or b,
    "equiv": lambda a, b: a == b,
    "eq": lambda a, b: a == b,
    "neq": lambda a, b: a != b,
    "in": lambda a, b: a in b,
    "notin": lambda a, b: a not in b,
    "set": lambda *xs: frozenset(xs),
    "tuple": lambda *xs: tuple(xs),
    "union": lambda a, b: a | b,
    "inter": lambda a, b: a & b,
    "setminus": lambda a, b: a - b,
}
