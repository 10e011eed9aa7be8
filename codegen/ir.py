"""The codegen IR: a TLA+ module as SANY resolved it, and the PlusCal structure found in it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from aegis.values import Value
from tools.tlc.cfg import TlcConfig


@dataclass(frozen=True, slots=True)
class Loc:
    """A source position: spec file (as shown to users), line and column (1-based)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


# Expression levels, as SANY computes them.
CONSTANT_LEVEL, STATE_LEVEL, ACTION_LEVEL = 0, 1, 2  # SANY's levels (3 is temporal)


@dataclass(frozen=True, slots=True)
class Ident:
    """A bound identifier (operator parameter, quantifier or function variable)."""

    name: str
    uid: int


@dataclass(frozen=True, slots=True)
class Lit:
    """A literal: TRUE/FALSE, a number or a string."""

    loc: Loc
    level: int
    value: bool | int | str


@dataclass(frozen=True, slots=True)
class Var:
    """A state variable, possibly primed."""

    loc: Loc
    level: int
    name: str
    primed: bool = False


@dataclass(frozen=True, slots=True)
class Const:
    """A CONSTANT of the module."""

    loc: Loc
    level: int
    name: str


@dataclass(frozen=True, slots=True)
class Param:
    """A reference to a bound identifier."""

    loc: Loc
    level: int
    ident: Ident


@dataclass(frozen=True, slots=True)
class Call:
    """An application of a user-defined operator (top-level or LET), by definition key."""

    loc: Loc
    level: int
    op: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Builtin:
    """A built-in or standard-module operator, by normalised name (see frontend.BUILTINS)."""

    loc: Loc
    level: int
    op: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Bound:
    """`x \\in S`, `x, y \\in S` or `<<x, y>> \\in S` in a quantifier or constructor."""

    idents: tuple[Ident, ...]
    is_tuple: bool
    domain: Expr


@dataclass(frozen=True, slots=True)
class Quant:
    """A binder: kind is exists, forall, choose, filter ({x \\in S: P}), map ({e: x \\in S})
    or function ([x \\in S |-> e])."""

    loc: Loc
    level: int
    kind: str
    bounds: tuple[Bound, ...]
    body: Expr


@dataclass(frozen=True, slots=True)
class If:
    """IF cond THEN then ELSE other."""

    loc: Loc
    level: int
    cond: Expr
    then: Expr
    other: Expr


@dataclass(frozen=True, slots=True)
class Case:
    """CASE arms [] OTHER -> other."""

    loc: Loc
    level: int
    arms: tuple[tuple[Expr, Expr], ...]
    other: Expr | None


@dataclass(frozen=True, slots=True)
class Let:
    """LET defs IN body; the definitions live in Module.defs under their keys."""

    loc: Loc
    level: int
    defs: tuple[str, ...]
    body: Expr


@dataclass(frozen=True, slots=True)
class Except:
    """[base EXCEPT !path1 = v1, !path2 = v2]; `@` in v_i is an At node."""

    loc: Loc
    level: int
    base: Expr
    updates: tuple[tuple[tuple[Expr, ...], Expr], ...]


@dataclass(frozen=True, slots=True)
class At:
    """`@` inside an EXCEPT update: the old value at that update's path."""

    loc: Loc
    level: int


@dataclass(frozen=True, slots=True)
class Record:
    """[f |-> e, ...] (kind "record") or [f : S, ...] (kind "records", a set of records)."""

    loc: Loc
    level: int
    kind: str
    fields: tuple[tuple[str, Expr], ...]


Expr: TypeAlias = (
    Lit | Var | Const | Param | Call | Builtin | Quant | If | Case | Let | Except | At | Record
)


@dataclass(frozen=True, slots=True)
class OpDef:
    """A user-defined operator: top-level (key = name) or LET-local (key = name#uid)."""

    key: str
    name: str
    params: tuple[Ident, ...]
    body: Expr
    level: int
    loc: Loc
    # its body is an INSTANCE's substitution (`INSTANCE M WITH ...` brought it in): TLC
    # takes such a body as one action, named after this definition (codegen/plain.py)
    instanced: bool = False


@dataclass(frozen=True, slots=True)
class Module:
    """The root module: declarations in source order and every definition it may use."""

    name: str
    path: str
    constants: tuple[str, ...]
    variables: tuple[str, ...]
    defs: dict[str, OpDef]
    top_level: tuple[str, ...]
    lines: tuple[str, ...] = ()
    declared: dict[str, Loc] = field(default_factory=dict)

    def source_line(self, loc: Loc) -> str:
        """The stripped source text of loc's first line (empty if unknown)."""
        if loc.file != self.path or not 0 < loc.line <= len(self.lines):
            return ""
        return self.lines[loc.line - 1].strip()


@dataclass(frozen=True, slots=True)
class Process:
    """A PlusCal process (kind "single"), process set ("set") or the uniprocess algorithm
    ("none"). `ids` is the id expression (single) or the set expression (set)."""

    name: str | None
    kind: str
    ids: Expr | None
    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Action:
    """One translator-produced step: a label operator, or `Terminating`."""

    label: str
    process: str | None
    self_param: Ident | None
    body: Expr
    loc: Loc


@dataclass(frozen=True, slots=True)
class PhaseMachine:
    """The designated phase variable's values and the phase-changing transitions."""

    variable: str
    states: tuple[Value, ...]
    initial: Value
    transitions: tuple[tuple[str, Value, Value], ...]


@dataclass(frozen=True, slots=True)
class Spec:
    """Everything the emitter needs: the module, its model config and its PlusCal structure."""

    module: Module
    config: TlcConfig
    constants: dict[str, Value]  # the config's constant values
    init: Expr
    processes: tuple[Process, ...]
    actions: tuple[Action, ...]
    invariants: tuple[str, ...]
    constraints: tuple[str, ...]
    properties: tuple[str, ...]
    phase: PhaseMachine | None = None


def children(e: Expr) -> tuple[Expr, ...]:
    """The direct subexpressions of `e` (LET definitions live in Module.defs, not here)."""
    parts = _CHILDREN.get(type(e))
    return () if parts is None else parts(e)


def _case_children(e: Case) -> tuple[Expr, ...]:
    arms = tuple(x for arm in e.arms for x in arm)
    return arms if e.other is None else (*arms, e.other)


# The direct subexpressions of each kind of node (leaves have none).
_CHILDREN: dict[type, Callable[[Any], tuple[Expr, ...]]] = {
    Call: lambda e: e.args,
    Builtin: lambda e: e.args,
    Quant: lambda e: (*(b.domain for b in e.bounds), e.body),
    If: lambda e: (e.cond, e.then, e.other),
    Case: _case_children,
    Let: lambda e: (e.body,),
    Except: lambda e: (e.base, *(x for path, v in e.updates for x in (*path, v))),
    Record: lambda e: tuple(v for _, v in e.fields),
}
