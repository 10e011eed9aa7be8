"""A version is torch.distributed.checkpoint's format: `dcp.load` reads a persisted rank without
Aegis, its metadata is what `dcp.save` writes, and the tree round-trips any state dict."""

from __future__ import annotations

import mmap
import pickle
from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.checkpoint import disk
from aegis.checkpoint.api import _save_direct
from aegis.checkpoint.plan import plan_state
from aegis.checkpoint.slot import read_version, write_version
from aegis.checkpoint.tree import flatten, unflatten

from .rank import same, state


def test_dcp_load_reads_a_persisted_rank_without_aegis(tmp_path: Path) -> None:
    saved = state(7)
    _save_direct(plan_state(saved, 7), str(tmp_path), 3)
    template = state(0)  # same structure, other values: dcp.load fills it in place
    dcp.load(template, checkpoint_id=disk.rank_dir(tmp_path, 7, 3), no_dist=True)
    # DCP names dict keys as strings and drops empty dicts; tensors land in place
    assert same(template["model"], saved["model"])
    assert torch.equal(
        template["optim"]["state"][0]["exp_avg"], saved["optim"]["state"][0]["exp_avg"]
    )
    assert template["step"] == 7
    assert torch.equal(template["noncontig"], saved["noncontig"])


def test_the_metadata_is_what_dcp_save_writes(tmp_path: Path) -> None:
    sd = state(2)
    dcp.save(sd, checkpoint_id=tmp_path / "dcp", no_dist=True)
    theirs = pickle.loads((tmp_path / "dcp" / ".metadata").read_bytes())
    _save_direct(plan_state(sd, 2), str(tmp_path / "ours"), 0)
    ours = pickle.loads((disk.rank_dir(tmp_path / "ours", 2, 0) / ".metadata").read_bytes())
    assert ours.state_dict_metadata == theirs.state_dict_metadata
    assert set(ours.storage_data) == set(theirs.storage_data)
    assert ours.planner_data == theirs.planner_data


def test_a_version_reads_back_zero_copy_and_private() -> None:
    sd = state(5)
    plan = plan_state(sd, 5)
    path = Path("/dev/shm") / f"aegis-test-{id(plan)}"
    path.write_bytes(b"\0" * plan.total)
    try:
        with open(path, "r+b") as f:
            buf = mmap.mmap(f.fileno(), plan.total)
        write_version(plan, buf, torch.frombuffer(buf, dtype=torch.uint8))
        buf.close()
        step, back = read_version(path, 5)
        assert step == 5 and same(back, sd)
        back["model"]["w"].add_(1)  # the rank's own pages: the version is not changed
        assert same(read_version(path, 5)[1], sd)
    finally:
        path.unlink()


def test_a_version_written_over_one_of_its_layout_is_the_version_written_whole() -> None:
    first, second = plan_state(state(1), 1), plan_state(state(2), 2)
    assert second.template is first.template

    def written(*plans: Any, framed: bool = False) -> bytes:
        buf = mmap.mmap(-1, second.total)
        whole = torch.frombuffer(buf, dtype=torch.uint8)
        for n, plan in enumerate(plans):
            write_version(plan, buf, whole, framed=framed and n == len(plans) - 1)
        return bytes(buf)

    alone = written(second)
    assert written(first, second, framed=True) == alone
    assert written(second, framed=True) != alone  # framed writes only the data and values


keys = st.one_of(st.text(min_size=1, max_size=4).filter(lambda k: "." not in k), st.integers(0, 5))
leaves = st.one_of(
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.builds(lambda n: torch.arange(n, dtype=torch.float32), st.integers(0, 4)),
)
trees: Any = st.recursive(
    leaves,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(keys, kids, max_size=3)),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(keys, trees, max_size=4))
def test_flatten_then_unflatten_gives_the_state_dict_back(sd: dict[Any, Any]) -> None:
    try:
        got, empties = flatten(sd)
    except ValueError:  # two entries with one DCP name (e.g. keys 1 and "1"): refused
        return
    back = unflatten([(leaf.path, leaf.value) for leaf in got], empties)
    assert same(back, sd)
