"""compare_environments flags exactly the version keys on which workers differ."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from aegis.checks.environment import VERSION_KEYS, compare_environments

versions = st.sampled_from([None, "1", "2", "12.4"])
envs = st.lists(st.fixed_dictionaries({k: versions for k in VERSION_KEYS}), min_size=1, max_size=6)


@given(envs)
def test_flags_exactly_the_differing_keys(workers: list[dict[str, Any]]) -> None:
    findings = compare_environments(workers)
    differing = {k for k in VERSION_KEYS if len({str(w[k]) for w in workers}) > 1}
    assert {f.key for f in findings} == differing
    for f in findings:
        assert f.kind == "multi-version"
        indices = sorted(i for ws in f.values.values() for i in ws)
        assert indices == list(range(len(workers)))  # every worker listed exactly once
        assert all(str(workers[i][f.key]) == v for v, ws in f.values.items() for i in ws)
        assert f.key in f.message()


@given(envs, st.randoms())
def test_order_of_workers_does_not_change_what_is_flagged(
    workers: list[dict[str, Any]], rnd: Any
) -> None:
    shuffled = list(workers)
    rnd.shuffle(shuffled)
    assert {f.key for f in compare_environments(workers)} == {
        f.key for f in compare_environments(shuffled)
    }


def test_identical_workers_have_no_findings() -> None:
    env = {"torch": "2.13.0", "cuda": "12.4", "nccl": "2.21.5", "cudnn": 90100}
    assert compare_environments([env, dict(env), dict(env)]) == []
    other = {**env, "cuda": "12.1"}
    (finding,) = compare_environments([env, other, env])
    assert finding.key == "cuda" and dict(finding.values) == {"12.4": (0, 2), "12.1": (1,)}
