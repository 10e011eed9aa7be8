"""TLA+ values as immutable, hashable Python values.

Shared by the generated tables, the TLC output parser and the conformance checker, so that a
state computed by generated code compares equal to the same state printed by TLC.

Mapping of TLA+ values:
  BOOLEAN -> bool, Int -> int, STRING -> str, model value -> ModelValue,
  set -> frozenset, sequence/tuple -> tuple, function and record -> Fn.
A function whose domain is exactly 1..n (n >= 0) *is* a sequence in TLA+, so `fn()` returns a
tuple for it; that keeps `<<a, b>> = [i \\in 1..2 |-> ...]` true in Python as it is in TLC.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar, TypeAlias

import immutables

Value: TypeAlias = Any  # bool | int | str | ModelValue | frozenset | tuple | Fn
PMap = immutables.Map  # the persistent (HAMT) map under Fn, also for generated key sets


class ModelValue:
    """A TLC model value (e.g. `w1` in `Workers = {w1, w2}`): equal only to itself.

    One object per name (interned), so equality is identity and hashing is the object's own:
    both run in C, and a model value is the key of every per-worker function. Ordered by
    name; immutable; a copy or pickle comes back as the same object. The table holds them
    weakly: a name nothing uses any more (a finished job's pods, in a controller serving
    many jobs) is forgotten, and no other object of that name is alive to differ from."""

    __slots__ = ("__weakref__", "name")
    name: str
    _interned: ClassVar[weakref.WeakValueDictionary[str, ModelValue]] = (
        weakref.WeakValueDictionary()
    )

    def __new__(cls, name: str) -> ModelValue:
        found = cls._interned.get(name)
        if found is not None:
            return found
        if not isinstance(name, str):
            raise TypeError(f"a model value is named by a string, not {name!r}")
        mv = object.__new__(cls)
        object.__setattr__(mv, "name", name)
        return cls._interned.setdefault(name, mv)

    def __setattr__(self, attr: str, value: object) -> None:
        raise AttributeError(f"model value {self.name} is immutable")

    def __delattr__(self, attr: str) -> None:
        raise AttributeError(f"model value {self.name} is immutable")

    def __reduce__(self) -> tuple[type[ModelValue], tuple[str]]:
        return (ModelValue, (self.name,))

    def __lt__(self, other: object) -> bool:
        if type(other) is not ModelValue:
            return NotImplemented
        return self.name < other.name

    def __le__(self, other: object) -> bool:
        if type(other) is not ModelValue:
            return NotImplemented
        return self.name <= other.name

    def __gt__(self, other: object) -> bool:
        if type(other) is not ModelValue:
            return NotImplemented
        return self.name > other.name

    def __ge__(self, other: object) -> bool:
        if type(other) is not ModelValue:
            return NotImplemented
        return self.name >= other.name

    def __repr__(self) -> str:
        return self.name


class Fn(Mapping[Value, Value]):
    """A TLA+ function or record: an immutable, hashable mapping (a persistent HAMT map).

    A function made by EXCEPT remembers the function it came from and the key it changed
    (`base`, `key`): generated code keeps derived sets current from that by re-testing only
    the changed keys. Provenance is no part of the value (equality, hash, repr ignore it)."""

    __slots__ = ("_base", "_depth", "_h", "_key", "_m")

    def __init__(self, items: Mapping[Value, Value] | Iterable[tuple[Value, Value]] = ()) -> None:
        self._m: immutables.Map[Value, Value] = (
            items._m if isinstance(items, Fn) else immutables.Map(items)
        )
        self._h: int | None = None
        self._base: Fn | None = None
        self._key: Value = None
        self._depth = 0

    @classmethod
    def _derived(cls, m: immutables.Map[Value, Value], base: Fn, key: Value) -> Fn:
        """The function `m`, made from `base` by changing `key`."""
        f = cls.__new__(cls)
        f._m, f._h = m, None
        if base._depth < MAX_PROVENANCE:
            f._base, f._key, f._depth = base, key, base._depth + 1
        else:  # a long chain nobody consumed: forget it (its users recompute)
            f._base, f._key, f._depth = None, None, 0
        return f

    def with_values(self, pairs: Iterable[tuple[Value, Value]]) -> Fn:
        """This function with each key of `pairs` mapped to its new value, in O(the pairs)
        (a persistent update, no copy of the others; no provenance). KeyError, with the key,
        for a key outside the domain."""
        edit = self._m.mutate()
        for key, value in pairs:
            if key not in edit:
                raise KeyError(key)
            edit[key] = value
        f = Fn.__new__(Fn)
        f._m, f._h, f._base, f._key, f._depth = edit.finish(), None, None, None, 0
        return f

    def changed_since(self, old: Fn) -> list[Value] | None:
        """The keys at which this function may differ from `old`, if it was made from `old`
        by EXCEPT (None when provenance does not say)."""
        keys: list[Value] = []
        f: Fn | None = self
        while f is not None:
            if f is old:
                return keys
            keys.append(f._key)
            f = f._base
        return None

    def forget_base(self) -> None:
        """Drop the provenance (the base becomes garbage once nothing else holds it)."""
        self._base, self._key, self._depth = None, None, 0

    def __getitem__(self, key: Value) -> Value:
        try:
            return self._m[key]
        except KeyError:
            raise KeyError(
                f"{render(key)} is not in the domain {render(frozenset(self._m))}"
            ) from None

    def __contains__(self, key: object) -> bool:
        return key in self._m

    def __iter__(self) -> Iterator[Value]:
        return iter(self._m)

    def __len__(self) -> int:
        return len(self._m)

    def lookup(self) -> Callable[[Value, Any], Any]:
        """The map's own `get(key, default)`: for reading many keys fast (no KeyError)."""
        return self._m.get

    def pairs(self) -> Iterable[tuple[Value, Value]]:
        """(key, value) pairs in no particular order, straight from the map (`items()` looks
        each key up again)."""
        return self._m.items()

    def __hash__(self) -> int:
        if self._h is None:
            self._h = hash(self._m)
        return self._h

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, Fn):
            return self._m == other._m
        return False

    def __repr__(self) -> str:
        return render(self)

    def __reduce__(self) -> tuple[type[Fn], tuple[immutables.Map[Value, Value]]]:
        return (Fn, (self._m,))  # a copy or pickle is the value alone, not its provenance


MAX_PROVENANCE = 32  # EXCEPTs a function remembers back (a committed state cuts the chain)


def fn(items: Mapping[Value, Value] | Iterable[tuple[Value, Value]]) -> Value:
    """Build a function value, normalised: domain 1..n becomes a tuple (a TLA+ sequence)."""
    d = dict(items)
    n = len(d)
    if all(type(k) is int for k in d) and set(d) == set(range(1, n + 1)):
        return tuple(d[i] for i in range(1, n + 1))
    return Fn(d)


def domain(f: Value) -> frozenset[Value]:
    """DOMAIN f for a function, record or sequence."""
    if isinstance(f, tuple):
        return frozenset(range(1, len(f) + 1))
    if isinstance(f, Fn):
        return frozenset(f)
    raise TypeError(f"DOMAIN applied to a non-function: {render(f)}")


def apply(f: Value, arg: Value) -> Value:
    """f[arg] for a function, record or sequence."""
    if type(f) is Fn:  # the common case first, one lookup (the generated code applies often)
        try:
            return f._m[arg]
        except KeyError:
            pass  # Fn.__getitem__ names the domain
    if isinstance(f, tuple):
        if type(arg) is int and 1 <= arg <= len(f):
            return f[arg - 1]
        raise KeyError(f"index {render(arg)} out of the domain of {render(f)}")
    if isinstance(f, Fn):
        return f[arg]
    raise TypeError(f"function application to a non-function: {render(f)}")


def except_(f: Value, path: tuple[Value, ...], update: Any) -> Value:
    """[f EXCEPT ![p1][p2]... = e]; `update` is called with the old value (for `@`).

    O(log n) for a function (one key of a persistent map); O(n) for a sequence."""
    head, rest = path[0], path[1:]
    old = apply(f, head)
    new = update(old) if not rest else except_(old, rest, update)
    if isinstance(f, tuple):
        lst = list(f)
        lst[head - 1] = new
        return tuple(lst)
    return Fn._derived(f._m.set(head, new), f, head)


def _sort_key(v: Value) -> tuple[int, Any]:
    if isinstance(v, bool):
        return (0, v)
    if isinstance(v, int):
        return (1, v)
    if isinstance(v, str):
        return (2, v)
    if isinstance(v, ModelValue):
        return (3, v.name)
    return (4, render(v))


def sorted_values(vs: Iterable[Value]) -> list[Value]:
    """A deterministic order for any mix of values (for printing and iteration)."""
    items = list(vs)
    if len(items) < 2:  # no key to compute: a record's is its rendering (the step log's
        return items  # one message added to or taken from msgs, at every report)
    return sorted(items, key=_sort_key)


def render(v: Value) -> str:
    """The value in TLC's print syntax."""
    if isinstance(v, bool | int | str | ModelValue):
        return _render_atom(v)
    if isinstance(v, frozenset):
        return "{" + ", ".join(render(x) for x in sorted_values(v)) + "}"
    if isinstance(v, tuple):
        return "<<" + ", ".join(render(x) for x in v) + ">>"
    if isinstance(v, Fn):
        return _render_fn(v)
    raise TypeError(f"not a TLA+ value: {v!r}")


def _render_atom(v: bool | int | str | ModelValue) -> str:
    """A boolean, integer, string or model value in TLC's print syntax."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return v.name


def _render_fn(f: Fn) -> str:
    """A function: a record when every key is a string, else `k :> v @@ ...`."""
    keys = sorted_values(f)
    if keys and all(isinstance(k, str) for k in keys):
        return "[" + ", ".join(f"{k} |-> {render(f[k])}" for k in keys) + "]"
    return "(" + " @@ ".join(f"{render(k)} :> {render(f[k])}" for k in keys) + ")"
