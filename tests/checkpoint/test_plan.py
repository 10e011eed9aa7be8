"""A plan made from the last layout (plan.Template) is the plan made in full: the same names,
records, index and metadata for a state dict of the same walk, and a state dict that differs
where the layout depends on it (a key or its type, a list, a dtype, a shape, a tensor where a
value was, a value serialised to another length) is planned in full, or refused as the full
plan refuses it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.checkpoint import plan as planning
from aegis.checkpoint import wire
from aegis.checkpoint.plan import Plan, SaveInputError, plan_state
from aegis.checkpoint.tree import flatten, unflatten

from .rank import state

keys = st.one_of(st.text(min_size=1, max_size=4).filter(lambda k: "." not in k), st.integers(0, 5))
tensors = st.builds(
    lambda n, dtype: torch.arange(n).to(dtype),
    st.integers(0, 4),
    st.sampled_from([torch.float32, torch.int64, torch.bfloat16, torch.bool]),
)
leaves = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=3), tensors)
trees: Any = st.recursive(
    leaves,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(keys, kids, max_size=3)),
    max_leaves=12,
)
states = st.dictionaries(keys, trees, max_size=4)


def layout(plan: Plan) -> tuple[object, ...]:
    """Everything of a plan that is written, and which tensors it copies."""
    return (
        plan.kind,
        plan.step,
        [(t.leaf.path, t.leaf.fqn, t.record, t.frame, id(t.tensor)) for t in plan.tensors],
        [(o.leaf.path, o.leaf.fqn, o.record, o.blob) for o in plan.objects],
        plan.empties,
        plan.data_len,
        plan.index,
        plan.meta,
    )


def outcome(make: Callable[[], Plan]) -> tuple[object, ...]:
    try:
        return layout(make())
    except SaveInputError as exc:
        return ("refused", str(exc))


def in_full(sd: Any, step: int) -> Plan:
    planning._templates.clear()
    return plan_state(sd, step)


def laid_out_first(sd: Any) -> bool:
    """Plan `sd` in full (its layout kept for the next plan); False if it is refused."""
    try:
        in_full(sd, 1)
    except SaveInputError:
        return False
    return True


def next_values(value: Any) -> Any:
    """The same structure with other values of the same kinds (the next step's state)."""
    if isinstance(value, dict):
        return {k: next_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [next_values(v) for v in value]
    if isinstance(value, torch.Tensor):
        return value.clone() if value.dtype == torch.bool else value + 1
    if isinstance(value, int):
        return value ^ 1  # same pickled length
    return copy.copy(value)


def test_the_next_steps_state_is_planned_from_the_layout_of_the_last() -> None:
    first = plan_state(state(1), 1)
    sd = state(2)
    second = plan_state(sd, 2)
    assert first.template is not None and second.template is first.template
    assert layout(second) == layout(in_full(sd, 2))


@settings(max_examples=150, deadline=None)
@given(states)
def test_a_state_of_the_same_walk_is_planned_from_the_layout_as_in_full(sd: Any) -> None:
    if not laid_out_first(sd):
        return
    template = planning._templates[wire.KIND_STATE]
    after = next_values(sd)
    got = plan_state(after, 2)
    assert got.template is template  # the fast path was taken
    assert layout(got) == layout(in_full(after, 2))


@settings(max_examples=300, deadline=None)
@given(states, st.data())
def test_a_state_that_differs_is_planned_as_in_full(sd: Any, data: st.DataObject) -> None:
    if not laid_out_first(sd):
        return
    after = _mutated(sd, data)
    assert outcome(lambda: plan_state(after, 2)) == outcome(lambda: in_full(after, 2))


@settings(max_examples=100, deadline=None)
@given(states, states)
def test_any_next_state_is_planned_as_in_full(sd: Any, after: Any) -> None:
    if laid_out_first(sd):
        assert outcome(lambda: plan_state(after, 2)) == outcome(lambda: in_full(after, 2))


def test_values_that_changed_places_are_planned_in_full() -> None:
    assert laid_out_first({"a": 1, "b": {}})
    after = {"a": {}, "b": 1}
    assert layout(plan_state(after, 2)) == layout(in_full(after, 2))
    assert [o.leaf.fqn for o in plan_state(after, 3).objects] == ["b"]


def test_a_bool_key_where_an_int_key_was_is_refused_as_in_full() -> None:
    assert laid_out_first({"state": {1: torch.zeros(2)}})
    with pytest.raises(SaveInputError, match="keys must be str or int"):
        plan_state({"state": {True: torch.zeros(2)}}, 2)


def _mutated(sd: dict[Any, Any], data: st.DataObject) -> dict[Any, Any]:
    """`sd` changed in one place the layout depends on."""
    leaves, empties = flatten(sd)
    how = data.draw(
        st.sampled_from(["shape", "dtype", "kind", "length", "key", "bool key", "list", "swap"]),
        label="how",
    )
    named = sorted((k for k in sd if how != "bool key" or k == 1), key=repr)
    if how in ("key", "bool key") and named:
        old = data.draw(st.sampled_from(named), label="key")
        new: object = True if how == "bool key" else f"{old}x"
        return {(new if k == old else k): v for k, v in sd.items()}
    if how == "swap" and len(sd) > 1:
        a, b = data.draw(st.permutations(sorted(sd, key=repr)), label="swap")[:2]
        return {**sd, a: sd[b], b: sd[a]}
    if how == "list":
        return {**sd, "added": [torch.zeros(1)]}
    if not leaves:
        return sd
    n = data.draw(st.integers(0, len(leaves) - 1), label="leaf")
    value = leaves[n].value
    if isinstance(value, torch.Tensor):
        changed: object = {
            "shape": torch.zeros(value.numel() + 1, dtype=value.dtype),
            "dtype": value.to(torch.float64 if value.dtype != torch.float64 else torch.int32),
            "kind": 7,
        }.get(how, value)
    else:
        changed = {"kind": torch.zeros(2), "length": "x" * 300}.get(how, value)
    entries = [(leaf.path, changed if i == n else leaf.value) for i, leaf in enumerate(leaves)]
    return unflatten(entries, empties)
