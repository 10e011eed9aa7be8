# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""TLA+ operators for the generated code that aegis.values does not provide."""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, NoReturn, TypeVar

from aegis.values import (
    Fn,
    ModelValue,
    PMap,
    Value,
    apply,
    domain,
    except_,
    fn,
    render,
    sorted_values,
)

BOOLEAN = frozenset({False, True})
T = TypeVar("T")


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


# ---- the runtime's path: observed choices bound, derived sets kept current per state ----

NO_BIND: Mapping[str, Value] = {}  # no choice observed: enumerate them all (never changed)
MAX_CHAIN = 16  # states a successor may be linked back through (a committed state has none)


_PLAIN = (bool, int, str, ModelValue)
SHARED_KEPT = 64  # constant functions and whole key sets kept (a spec has a handful)


def const_fn(dom: frozenset[Value], value: Callable[[], Value]) -> Value:
    """[x \\in dom |-> e] where e does not name x: one value for every key, built once per
    (domain, value) and shared (values are immutable): a phase change that resets every
    worker's entry costs O(1) after the first time, and derived sets see the same object.
    `e` is evaluated only if dom is not empty, as the comprehension would. Only a plain
    value is shared (a tuple holding TRUE equals one holding 1 in Python, not in TLA+)."""
    if not dom:
        return fn(())
    v = value()
    if type(v) not in _PLAIN:
        return fn(dict.fromkeys(dom, v))
    return _shared_fn(dom, v)


@functools.lru_cache(maxsize=SHARED_KEPT, typed=True)  # typed: FALSE and 0 are two functions
def _shared_fn(dom: frozenset[Value], v: Value) -> Value:
    return fn(dict.fromkeys(dom, v))


def bound(value: Value, member: bool) -> list[Value]:
    """The values an observed choice ranges over: itself if it is in the set, else none."""
    return [value] if member else []


def unique(items: list[T]) -> list[T]:
    """The items without duplicates, in order (hashes them only when there are several)."""
    return items if len(items) < 2 else list(dict.fromkeys(items))


class Memo:
    """The base of State: slots for what is cached on a state (no part of its value, not
    compared, hashed, printed or pickled): its sites' entries and the state it came from."""

    __slots__ = ("_depth", "_known", "_memo", "_parent")
    _depth: int  # how many uncommitted states back `_parent` links
    _known: tuple[Any, dict[Any, Value]]  # (constants, 0-ary definition -> its value here)
    _memo: dict[Site, _Entry]  # the entries of the sites asked of this state
    _parent: Any  # the state this one is a successor of (None once committed)


def known(c: Any, s: Any) -> dict[Any, Value]:
    """The values of 0-ary definitions already computed in s under constants c."""
    try:
        kc, values = s._known
        if kc is c:
            return values
    except AttributeError:
        pass
    values = {}
    object.__setattr__(s, "_known", (c, values))
    return values


def child(parent: Any, new: T) -> T:
    """`new`, a successor of `parent`: linked to it, so that the entries of its sites are
    computed from the parent's by re-testing the keys that changed."""
    depth = getattr(parent, "_depth", 0)
    if depth < MAX_CHAIN:
        object.__setattr__(new, "_parent", parent)
        object.__setattr__(new, "_depth", depth + 1)
    return new


class Site:
    """A quantifier over a CONSTANT set (`\\E x \\in S : P`, `\\A`, `{x \\in S : P}`) whose body
    reads variables `keyed` only as `v[x]` and variables `reads` as a whole.

    Each state caches the set of x with P(x) (a persistent map). A successor's set is the
    parent's, re-testing only the keys where a `keyed` function changed (an EXCEPT records
    them); it is computed from scratch when a variable in `reads` changed, or when the
    provenance is unknown (finite differencing, Paige & Koenig 1982). With `by_value` the
    body uses x nowhere but in `v[x]`, so P(x) is a function of the `keyed` values at x: a
    computation from scratch tests each distinct combination of them once."""

    __slots__ = ("anchor", "by_value", "keyed", "keyed_of", "reads", "reads_of", "variables")

    def __init__(
        self, anchor: str, keyed: tuple[str, ...], reads: tuple[str, ...], by_value: bool = False
    ) -> None:
        self.anchor, self.keyed, self.reads, self.by_value = anchor, keyed, reads, by_value
        self.variables = frozenset(keyed + reads)  # every variable its body reads
        self.keyed_of, self.reads_of = _values_of(keyed), _values_of(reads)

    def __repr__(self) -> str:
        return f"Site({self.anchor}, keyed={self.keyed}, reads={self.reads})"


Test = Callable[[Any, Any, Value], Value]


def _values_of(names: tuple[str, ...]) -> Callable[[Any], tuple[Value, ...]]:
    """A function from a state to the tuple of its values of the variables `names`."""
    if not names:
        return lambda s: ()
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda s: (one(s),)
    many: Callable[[Any], tuple[Value, ...]] = operator.attrgetter(*names)
    return many


class _Entry:
    """One site's value in one state: the satisfying keys and what they were computed from."""

    __slots__ = ("c", "dom", "fns", "frozen", "members", "test", "vals")

    def __init__(
        self,
        c: Any,
        dom: frozenset[Value],
        fns: tuple[Value, ...],
        vals: tuple[Value, ...],
        test: Test,
        members: PMap[Value, bool],
    ) -> None:
        self.c, self.dom, self.fns, self.vals, self.test = c, dom, fns, vals, test
        self.members = members
        self.frozen: frozenset[Value] | None = None


def _memo(s: Any) -> dict[Site, _Entry]:
    try:
        memo: dict[Site, _Entry] = s._memo
    except AttributeError:
        memo = {}
        object.__setattr__(s, "_memo", memo)
    return memo


def _entry(site: Site, c: Any, s: Any, dom: frozenset[Value], test: Test) -> _Entry:
    memo = _memo(s)
    e = memo.get(site)
    if e is not None and e.c is c and e.dom is dom:
        return e
    found = None
    p = getattr(s, "_parent", None)
    while p is not None and found is None:
        found = p._memo.get(site) if hasattr(p, "_memo") else None
        p = getattr(p, "_parent", None)
    e = None
    if found is not None and found.c is c and found.dom is dom:
        e = _update(site, found, s, test)
    if e is None:
        e = _full(site, c, s, dom, test)
    memo[site] = e
    return e


def _full(site: Site, c: Any, s: Any, dom: frozenset[Value], test: Test) -> _Entry:
    fns = site.keyed_of(s)
    vals = site.reads_of(s)
    found = _by_value(c, s, dom, test, fns) if site.by_value else None
    if found is None:
        found = (x for x in dom if test(c, s, x))
    members = _every_key(dom) if found is dom else PMap(dict.fromkeys(found, True))
    return _Entry(c, dom, fns, vals, test, members)


@functools.lru_cache(maxsize=SHARED_KEPT)
def _every_key(dom: frozenset[Value]) -> PMap[Value, bool]:
    """The key set that holds every key of dom, built once per domain (a few domains: the
    CONSTANT sets quantified over)."""
    return PMap(dict.fromkeys(dom, True))


def _by_value(
    c: Any, s: Any, dom: frozenset[Value], test: Test, fns: tuple[Value, ...]
) -> Iterable[Value] | None:
    """The x in dom with test(x), testing each distinct combination of the functions' values
    at x once (a key outside a function's domain reads as None there: the body, which uses x
    only as v[x], fails alike for every such key); the passes over dom are C loops (map, zip,
    dict, compress). None (test each key) when a function is not an Fn or one maps keys to
    both booleans and integers (TRUE = 1 in Python, not in TLA+). Values holding TRUE at one
    key and 1 at another deeper down (<<TRUE>>, <<1>>) are still grouped: only a spec that
    mixes the two there, which TLC rejects when it compares them, can tell."""
    if not fns or any(type(f) is not Fn for f in fns):
        return None
    keys = tuple(dom)
    columns = [list(map(f.lookup(), keys)) for f in fns]
    for col in columns:
        types = set(map(type, col))
        if bool in types and int in types:
            return None
    rows: list[Any] = columns[0] if len(columns) == 1 else list(zip(*columns, strict=True))
    first = dict(zip(rows, keys, strict=True))  # each combination, with one key showing it
    holds = {row: bool(test(c, s, x)) for row, x in first.items()}
    if not any(holds.values()):
        return ()
    if all(holds.values()):
        return dom
    return itertools.compress(keys, map(holds.__getitem__, rows))


def _update(site: Site, old: _Entry, s: Any, test: Test) -> _Entry | None:
    """The entry for s from an ancestor's entry, or None if it must be computed afresh."""
    vals = old.vals
    if site.reads:
        vals = site.reads_of(s)
        for a, b in zip(vals, old.vals, strict=True):  # a function: only the same object
            if a is not b and (isinstance(a, Fn) or type(a) is not type(b) or a != b):
                return None
    fns = site.keyed_of(s)
    changed: set[Value] | None = None
    for new_f, old_f in zip(fns, old.fns, strict=True):
        if new_f is not old_f:
            keys = new_f.changed_since(old_f) if isinstance(new_f, Fn) else None
            if keys is None:
                return None
            changed = set(keys) if changed is None else changed | set(keys)
    if changed is None:
        return old  # nothing it reads changed: the very same entry
    c, dom, members = old.c, old.dom, old.members
    flipped = [x for x in changed if x in dom and bool(test(c, s, x)) != (x in members)]
    if flipped:
        edit = members.mutate()
        for x in flipped:
            if x in members:
                del edit[x]
            else:
                edit[x] = True
        members = edit.finish()
    e = _Entry(c, dom, fns, vals, test, members)
    if not flipped:
        e.frozen = old.frozen
    return e


def exists(site: Site, c: Any, s: Any, dom: frozenset[Value], test: Test) -> bool:
    """\\E x \\in dom : test(x), from the site's entry in s."""
    return len(_entry(site, c, s, dom, test).members) > 0


def forall(site: Site, c: Any, s: Any, dom: frozenset[Value], test: Test) -> bool:
    """\\A x \\in dom : test(x), from the site's entry in s."""
    return len(_entry(site, c, s, dom, test).members) == len(dom)


def count(site: Site, c: Any, s: Any, dom: frozenset[Value], test: Test) -> int:
    """Cardinality({x \\in dom : test(x)}), from the site's entry in s (for the runtime: e.g.
    how many workers finished, kept current as the other sites are)."""
    return len(_entry(site, c, s, dom, test).members)


def select(site: Site, c: Any, s: Any, dom: frozenset[Value], test: Test) -> frozenset[Value]:
    """{x \\in dom : test(x)}, from the site's entry in s (built once per entry)."""
    e = _entry(site, c, s, dom, test)
    if e.frozen is None:
        e.frozen = frozenset(e.members)
    return e.frozen


def commit(s: Any, variables: tuple[str, ...], changed: Collection[str] | None = None) -> None:
    """s is the runtime's current state: carry every site entry of the state it came from
    over to s (cheap: only changed keys are re-tested), then cut the links to older states
    and the EXCEPT provenance of its functions, so that memory does not grow with steps.

    `changed`: the variables whose value in s is another object than in the state it came
    from (the caller's delta); None: found here."""
    parent = getattr(s, "_parent", None)
    forget: Collection[str] = variables  # the variables whose provenance is cut
    if parent is not None:
        memo = _memo(s)
        if changed is None:
            changed = [v for v in variables if getattr(s, v) is not getattr(parent, v)]
        if getattr(parent, "_parent", None) is None:
            forget = changed  # a value shared with a committed parent lost it at its commit
        for site, old in getattr(parent, "_memo", {}).items():
            if site in memo:
                continue
            if site.variables.isdisjoint(changed):
                memo[site] = old  # nothing it reads is another object: the very same entry
                continue
            e = _update(site, old, s, old.test)
            if e is not None:
                memo[site] = e
    object.__setattr__(s, "_parent", None)
    object.__setattr__(s, "_depth", 0)
    for name in forget:
        v = getattr(s, name)
        if isinstance(v, Fn):
            v.forget_base()
