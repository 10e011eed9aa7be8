"""aegis.values.Fn: a persistent map whose EXCEPTs remember what they changed (issue 12)."""

from __future__ import annotations

import copy
import gc
import pickle
import weakref

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.values import MAX_PROVENANCE, Fn, ModelValue, except_, fn

keys = st.integers(0, 30)
updates = st.lists(st.tuples(keys, st.integers(-3, 3)), max_size=12)


@given(base=st.dictionaries(keys, st.integers(-3, 3), min_size=1), edits=updates)
def test_a_function_made_by_excepts_equals_the_same_function_built_at_once(
    base: dict[int, int], edits: list[tuple[int, int]]
) -> None:
    f = Fn(base)
    want = dict(base)
    for k, v in edits:
        if k in want:
            f = except_(f, (k,), lambda _old, v=v: v)
            want[k] = v
    direct = Fn(want)
    assert f == direct and hash(f) == hash(direct) and dict(f.items()) == want
    assert {f: 1}[direct] == 1  # usable as the same dict key


@given(base=st.dictionaries(keys, st.integers(-3, 3), min_size=1), edits=updates)
def test_with_values_is_the_function_with_those_keys_changed_and_leaves_it_as_it_was(
    base: dict[int, int], edits: list[tuple[int, int]]
) -> None:
    f = Fn(base)
    inside = [(k, v) for k, v in edits if k in base]
    g = f.with_values(inside)
    assert g == Fn({**base, **dict(inside)}) and dict(f.items()) == base
    assert g.changed_since(f) is None  # no provenance: its readers recompute
    outside = next((k for k, _ in edits if k not in base), None)
    if outside is not None:
        with pytest.raises(KeyError) as err:
            f.with_values([*inside, (outside, 0)])
        assert err.value.args == (outside,)


@given(base=st.dictionaries(keys, st.integers(), min_size=1), edits=updates)
def test_provenance_names_every_changed_key(
    base: dict[int, int], edits: list[tuple[int, int]]
) -> None:
    root = Fn(base)
    f = root
    for k, v in edits:
        if k in base:
            f = except_(f, (k,), lambda _old, v=v: v)
    changed = f.changed_since(root)
    assert changed is not None
    assert {k for k in base if f[k] != root[k]} <= set(changed)


def test_unrelated_or_forgotten_provenance_says_nothing() -> None:
    f = Fn({"a": 1, "b": 2})
    g = except_(f, ("a",), lambda old: old + 1)
    assert g.changed_since(f) == ["a"]
    assert g.changed_since(Fn({"a": 1, "b": 2})) is None  # equal, but not its base
    g.forget_base()
    assert g.changed_since(f) is None


def test_a_long_chain_is_forgotten_rather_than_kept() -> None:
    root = Fn({i: 0 for i in range(4)})
    f = root
    for n in range(MAX_PROVENANCE + 2):
        f = except_(f, (n % 4,), lambda old: old + 1)
    assert f.changed_since(root) is None  # memory stays bounded; users recompute
    assert f == Fn(
        {i: (MAX_PROVENANCE + 2) // 4 + (i < (MAX_PROVENANCE + 2) % 4) for i in range(4)}
    )


def test_nested_except_changes_only_the_outer_key() -> None:
    f = Fn({"x": Fn({"a": 1}), "y": Fn({"a": 2})})
    g = except_(f, ("x", "a"), lambda old: old + 10)
    assert g == Fn({"x": Fn({"a": 11}), "y": Fn({"a": 2})})
    assert g.changed_since(f) == ["x"]
    assert f["x"]["a"] == 1  # the old value is untouched


def test_mapping_interface_and_errors() -> None:
    w1, w2 = ModelValue("w1"), ModelValue("w2")
    f = Fn({w1: True, w2: False})
    assert len(f) == 2 and set(f) == {w1, w2} and w1 in f and ModelValue("w3") not in f
    assert repr(f) == "(w1 :> TRUE @@ w2 :> FALSE)"
    with pytest.raises(KeyError, match=r"w3 is not in the domain \{w1, w2\}"):
        f[ModelValue("w3")]
    assert Fn(f) == f and Fn(f) is not f
    assert fn({1: "a", 2: "b"}) == ("a", "b")  # domain 1..n is a sequence
    assert Fn({"a": 1}) != {"a": 1}  # a function is not a dict


def test_a_copy_is_the_value_without_its_provenance() -> None:
    f = except_(Fn({"a": 1}), ("a",), lambda old: old + 1)
    for g in (pickle.loads(pickle.dumps(f)), copy.deepcopy(f), copy.copy(f)):
        assert g == f and hash(g) == hash(f) and g.changed_since(Fn({"a": 1})) is None


@given(st.text(max_size=8), st.text(max_size=8))
def test_a_model_value_is_one_object_per_name(a: str, b: str) -> None:
    """Interned: equality is identity (hashing and comparing run in C), and it agrees with
    the names; a copy or a pickle is the same object; ordered by name."""
    x, y = ModelValue(a), ModelValue(b)
    assert (x == y) == (a == b) and (x is y) == (a == b)
    assert (hash(x) == hash(y)) if a == b else True
    assert copy.deepcopy(x) is x and pickle.loads(pickle.dumps(x)) is x
    assert (x < y) == (a < b) and (x >= y) == (a >= b)
    assert x.name == a and repr(x) == a


def test_a_model_value_is_no_string_and_cannot_change() -> None:
    w = ModelValue("w1")
    assert w not in ["w1"] and "w1" not in [w] and len({w, "w1"}) == 2  # both ways
    with pytest.raises(AttributeError):
        w.name = "w2"
    with pytest.raises(TypeError):
        ModelValue(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _ = w < "w2"
    assert ModelValue("w1").name == "w1"


def test_a_model_value_nothing_uses_is_forgotten() -> None:
    """The intern table holds model values weakly: a controller serving job after job does not
    keep every pod name it ever saw."""
    gone = weakref.ref(ModelValue("a-pod-of-a-finished-job"))
    gc.collect()
    assert gone() is None
    kept = ModelValue("w-kept")
    assert ModelValue("w-kept") is kept
