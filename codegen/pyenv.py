"""Emitter, names: Python precedence levels, reserved names, and the Env that says what a
TLA+ name means at a point of a generated function."""

from __future__ import annotations

import io
import keyword
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from codegen import ir

# Python precedence levels (higher binds tighter).
LAMBDA, TERNARY, OR, AND, NOT, CMP, BOR, BAND, ADD, MUL, UNARY, POW, ATOM = (
    0, 1, 2, 3, 4, 5, 6, 8, 10, 11, 12, 13, 15,
)  # fmt: skip

# Names the generated modules define or import; TLA+ names equal to one get a trailing "_".
RESERVED = frozenset(
    {"c", "s", "out", "Fn", "fn", "apply", "domain", "except_", "ModelValue", "Value"}
    | {"State", "Constants", "Successor", "ActionInfo", "ProcessInfo", "dataclass", "field"}
    | {"any", "all", "len", "frozenset", "tuple", "bool", "int", "str", "next", "dict", "list"}
    | {"range", "sorted", "type", "iter", "isinstance", "object", "Callable", "Iterator"}
    | {"print", "set", "map", "filter", "vars", "id", "hash", "min", "max", "sum"}
    | set(keyword.kwlist)
    | set(keyword.softkwlist)
)


def py_name(name: str) -> str:
    """A TLA+ identifier as a Python identifier that clashes with nothing generated."""
    if not name.isidentifier():
        name = "op_" + name
    return name + "_" if name in RESERVED else name


@dataclass(frozen=True, slots=True)
class Py:
    """Python expression text and its precedence."""

    text: str
    prec: int

    def at(self, prec: int) -> str:
        """The text, parenthesised unless it binds at least as tightly as `prec`."""
        return self.text if self.prec >= prec else f"({self.text})"


@dataclass
class Scope:
    """The Python names taken in one generated function."""

    taken: set[str] = field(default_factory=lambda: set(RESERVED))
    used: set[str] = field(default_factory=set)

    def fresh(self, base: str) -> str:
        """A new name based on `base`."""
        name = py_name(base)
        n = 1
        while name in self.taken:
            n += 1
            name = f"{py_name(base)}_{n}"
        self.taken.add(name)
        return name


@dataclass(frozen=True, slots=True)
class Thunk:
    """An operator argument, compiled where it is used (call-by-name, like TLA+)."""

    expr: ir.Expr
    env: Env


@dataclass(frozen=True, slots=True)
class Env:
    """What names mean at a point of a generated function."""

    module: ir.Module
    scope: Scope
    params: Mapping[int, str | Thunk] = field(default_factory=dict)
    lets: Mapping[str, Env] = field(default_factory=dict)
    state: str | None = "s"
    primed: Mapping[str, str] = field(default_factory=dict)
    init_mode: bool = False
    at: str | None = None
    loop_names: frozenset[str] = frozenset()

    def bind(self, ident: ir.Ident, value: str | Thunk) -> Env:
        """This env with a bound identifier."""
        return replace(self, params={**self.params, ident.uid: value})

    def in_loop(self, *names: str) -> Env:
        """This env inside a loop over `names` (a lambda using them must bind them)."""
        return replace(self, loop_names=self.loop_names | set(names))


def lit(value: bool | int | str) -> str:
    """A literal as Python text."""
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    return repr(value)


def python_names(text: str) -> set[str]:
    """The names used in a Python expression."""
    toks = tokenize.generate_tokens(io.StringIO(text).readline)
    return {t.string for t in toks if t.type == tokenize.NAME}


def let_env(e: ir.Let, env: Env) -> Env:
    """The env inside LET: its definitions are inlined where used, seeing this env."""
    lets = dict(env.lets)
    inner = replace(env, lets=lets)
    for key in e.defs:
        lets[key] = inner
    return inner
