"""Slurm's hostlist syntax and variables, as `srun aegis run` reads them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.runtime.launcher.slurm import (
    HostlistError,
    SlurmNodes,
    expand_hostlist,
    max_tasks_per_node,
    slurm_nodes,
)

prefixes = st.text("abcgpu-", min_size=1, max_size=6).filter(lambda p: not p[-1].isdigit())


@st.composite
def groups(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A bracket group (ranges and singles, each with its own padding) and what it means."""
    parts, names = [], []
    for _ in range(draw(st.integers(1, 3))):
        low = draw(st.integers(0, 120))
        high = draw(st.integers(low, low + 12))
        width = draw(st.integers(1, 4))
        lo = str(low).zfill(width)
        parts.append(lo if low == high else f"{lo}-{high}")
        names += [str(i).zfill(len(lo)) for i in range(low, high + 1)]
    return ",".join(parts), names


@given(
    st.lists(st.tuples(prefixes, groups(), st.one_of(st.none(), groups())), min_size=1, max_size=4)
)
def test_expansion_matches_the_written_list(items: list[Any]) -> None:
    text, want = [], []
    for prefix, (group, names), second in items:
        if second is None:
            text.append(f"{prefix}[{group}]")
            want += [prefix + n for n in names]
        else:  # two groups: the first varies slowest
            text.append(f"{prefix}[{group}]-x[{second[0]}]")
            want += [f"{prefix}{a}-x{b}" for a in names for b in second[1]]
    assert expand_hostlist(",".join(text)) == want


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("node1", ["node1"]),
        ("gpu[01-03,07],login1", ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]),
        ("x[8-11]y", ["x8y", "x9y", "x10y", "x11y"]),
        ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
        ("a,b", ["a", "b"]),
    ],
)
def test_examples_from_slurm(text: str, hosts: list[str]) -> None:
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("a,,b", "empty host"),
        ("n[]", "not N or N-M"),
        ("n[3-1]", "backwards"),
        ("n[1-2", "without ']'"),
        ("n]", "without '['"),
        ("n[[1]]", "nested"),
        ("n[a-b]", "not N or N-M"),
        ("n[0-9999999]", "more than"),
    ],
)
def test_malformed_lists_are_refused(text: str, why: str) -> None:
    with pytest.raises(HostlistError, match=re.escape(why)):
        expand_hostlist(text)


def test_tasks_per_node() -> None:
    assert max_tasks_per_node("1(x4)") == 1
    assert max_tasks_per_node("2(x3),1") == 2
    with pytest.raises(HostlistError):
        max_tasks_per_node("two")


STEP = {
    "SLURM_NODEID": "2",
    "SLURM_NNODES": "3",
    "SLURM_JOB_NODELIST": "gpu[07-09]",
    "SLURM_STEP_TASKS_PER_NODE": "1(x3)",
}


def test_a_step_names_node_0_and_this_node() -> None:
    nodes = slurm_nodes(STEP)
    assert nodes == SlurmNodes(3, 2, "gpu07")
    assert nodes.rdzv_endpoint == "gpu07:29400"
    # a step's own node list and count win over the job's
    step = {
        **STEP,
        "SLURM_STEP_NODELIST": "gpu[08-09]",
        "SLURM_STEP_NUM_NODES": "2",
        "SLURM_NODEID": "1",
    }
    assert slurm_nodes(step) == SlurmNodes(2, 1, "gpu08")


def test_outside_slurm_there_is_nothing() -> None:
    assert slurm_nodes({}) is None
    assert slurm_nodes({"SLURM_NODEID": "0"}) is None


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"SLURM_STEP_TASKS_PER_NODE": "2(x3)"}, "ntasks-per-node=1"),
        ({"SLURM_NNODES": "4"}, "has 3 hosts"),
        ({"SLURM_NODEID": "3"}, "node 3"),
        ({"SLURM_NODEID": "x"}, "SLURM_NODEID"),
    ],
)
def test_inconsistent_slurm_values_are_refused(change: dict[str, str], why: str) -> None:
    with pytest.raises(HostlistError, match=why):
        slurm_nodes({**STEP, **change})
