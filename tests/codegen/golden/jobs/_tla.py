# Generated from tests/codegen/fixtures/Jobs.tla by codegen — do not edit.
"""TLA+ operators for the generated code that aegis.values does not provide."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NoReturn

from aegis.values import Fn, Value, apply, domain, except_, fn, render, sorted_values

BOOLEAN = frozenset({False, True})


class EvalError(ValueError):
    """An expression TLC would also refuse to evaluate (the message says where)."""


def enum(s: Iterable[Value]) -> list[Value]:
    """The elements of a finite set in a fixed order (successors are listed in it)."""
    return sorted_values(s)


def ordered(ids: frozenset[Value]) -> list[Value]:
    """Process ids in a fixed order (None is the id of a uniprocess algorithm)."""
    return [None] if ids == {None} else sorted_values(ids)


def boolean(v: Value, what: str) -> bool:
    """`v` if it is a Boolean; TLC also rejects a non-Boolean predicate."""
    if type(v) is not bool:
        raise EvalError(f"{what} is {render(v)}, not a Boolean")
    return v


def case_error(where: str) -> NoReturn:
    """CASE with no true arm and no OTHER."""
    raise EvalError(f"{where}: no CASE arm is true")


def choose(witnesses: list[Value], where: str) -> Value:
    """CHOOSE: the witness if there is one; the least of integers (TLC's choice)."""
    found = set(witnesses)
    if len(found) == 1:
        return found.pop()
    if not found:
        raise EvalError(f"{where}: CHOOSE found no value satisfying the predicate")
    if all(type(x) is int for x in found):
        return min(found)
    raise EvalError(f"{where}: CHOOSE has several witnesses; TLC's pick cannot be reproduced")


def except_value(f: Value, path: tuple[Value, ...], v: Value) -> Value:
    """[f EXCEPT ![p1][p2]... = v] (v does not use @)."""
    return except_(f, path, lambda _old: v)


def interval(a: int, b: int) -> frozenset[int]:
    """a..b"""
    return frozenset(range(a, b + 1))


def div(a: int, b: int) -> int:
    """a \\div b (rounds towards minus infinity, as TLC does)."""
    if b == 0:
        raise EvalError(f"{a} \\div 0")
    return a // b


def mod(a: int, b: int) -> int:
    """a % b for b > 0."""
    if b <= 0:
        raise EvalError(f"{a} % {b}: the divisor must be positive")
    return a % b


def subsets(s: frozenset[Value]) -> frozenset[frozenset[Value]]:
    """SUBSET s"""
    items = list(s)
    combos = (itertools.combinations(items, n) for n in range(len(items) + 1))
    return frozenset(frozenset(c) for c in itertools.chain.from_iterable(combos))


def union(s: frozenset[frozenset[Value]]) -> frozenset[Value]:
    """UNION s"""
    return frozenset().union(*s)


def product(*sets: frozenset[Value]) -> frozenset[tuple[Value, ...]]:
    """s1 \\X s2 \\X ..."""
    return frozenset(itertools.product(*sets))


def fcn_set(dom: frozenset[Value], rng: frozenset[Value]) -> frozenset[Value]:
    """[dom -> rng]"""
    keys = sorted_values(dom)
    return frozenset(
        fn(zip(keys, vals, strict=True)) for vals in itertools.product(rng, repeat=len(keys))
    )


def record_set(fields: Mapping[str, frozenset[Value]]) -> frozenset[Value]:
    """[f1 : S1, f2 : S2, ...]"""
    keys = list(fields)
    return frozenset(
        Fn(zip(keys, vals, strict=True)) for vals in itertools.product(*fields.values())
    )


def subseteq(s: Iterable[Value], t: Any) -> bool:
    """s \\subseteq t, for t a lazily checked set such as Nat or [S -> T]."""
    return all(x in t for x in s)


def _seq(s: Value) -> tuple[Value, ...]:
    if not isinstance(s, tuple):
        raise EvalError(f"{render(s)} is not a sequence")
    return s


def append(s: Value, e: Value) -> tuple[Value, ...]:
    """Append(s, e)"""
    return (*_seq(s), e)


def head(s: Value) -> Value:
    """Head(s)"""
    if not _seq(s):
        raise EvalError("Head of the empty sequence")
    return s[0]


def tail(s: Value) -> tuple[Value, ...]:
    """Tail(s)"""
    if not _seq(s):
        raise EvalError("Tail of the empty sequence")
    return s[1:]


def concat(s: Value, t: Value) -> tuple[Value, ...]:
    """s \\o t"""
    return _seq(s) + _seq(t)


def subseq(s: Value, m: int, n: int) -> tuple[Value, ...]:
    """SubSeq(s, m, n)"""
    if m > n:
        return ()
    if m < 1 or n > len(_seq(s)):
        raise EvalError(f"SubSeq({render(s)}, {m}, {n}) is out of range")
    return s[m - 1 : n]


def single(k: Value, v: Value) -> Value:
    """k :> v"""
    return fn({k: v})


def merge(f: Value, g: Value) -> Value:
    """f @@ g (f wins where both are defined)."""
    items = {k: apply(g, k) for k in domain(g)}
    items.update((k, apply(f, k)) for k in domain(f))
    return fn(items)


class _Lazy:
    """A set that is only ever asked for membership (it may be infinite)."""

    def __contains__(self, x: object) -> bool:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Value]:
        raise EvalError(f"{self!r} cannot be enumerated")


class _Kind(_Lazy):
    def __init__(self, name: str, test: Any) -> None:
        self.name, self.test = name, test

    def __contains__(self, x: object) -> bool:
        return bool(self.test(x))

    def __repr__(self) -> str:
        return self.name


NAT = _Kind("Nat", lambda x: type(x) is int and x >= 0)
INT = _Kind("Int", lambda x: type(x) is int)
STRING_SET = _Kind("STRING", lambda x: type(x) is str)
BOOLEAN_SET = _Kind("BOOLEAN", lambda x: type(x) is bool)


class SeqOf(_Lazy):
    """Seq(t)"""

    def __init__(self, t: Any) -> None:
        self.t = t

    def __contains__(self, x: object) -> bool:
        return isinstance(x, tuple) and all(e in self.t for e in x)


class SubsetOf(_Lazy):
    """SUBSET t"""

    def __init__(self, t: Any) -> None:
        self.t = t

    def __contains__(self, x: object) -> bool:
        return isinstance(x, frozenset) and all(e in self.t for e in x)


class FcnsOf(_Lazy):
    """[dom -> t]"""

    def __init__(self, dom: frozenset[Value], t: Any) -> None:
        self.dom, self.t = dom, t

    def __contains__(self, x: object) -> bool:
        if not isinstance(x, Fn | tuple) or domain(x) != self.dom:
            return False
        return all(apply(x, k) in self.t for k in self.dom)


class RcdsOf(_Lazy):
    """[f1 : t1, f2 : t2, ...]"""

    def __init__(self, fields: Mapping[str, Any]) -> None:
        self.fields = dict(fields)

    def __contains__(self, x: object) -> bool:
        if not isinstance(x, Fn) or set(x) != set(self.fields):
            return False
        return all(x[k] in t for k, t in self.fields.items())
