"""CheckResult, CheckParams and the worker's wire protocol round-trip through JSON."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.checks.params import CheckParams, ParamsError, Rendezvous, simulated_from_env
from aegis.checks.protocol import (
    Request,
    Response,
    StoreSpec,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    parse_line,
)
from aegis.checks.result import DEFAULT_BUDGETS, CheckResult, CheckType

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
results = st.builds(
    CheckResult,
    check_type=st.sampled_from([c.value for c in CheckType]),
    passed=st.booleans(),
    result=st.text(max_size=40),
    timestamp=st.floats(0, 2e9),
    duration_s=st.floats(0, 1e3),
    applicable=st.booleans(),
    details=st.dictionaries(st.text(max_size=8), json_scalars, max_size=4),
)


@given(results)
def test_check_result_json_round_trip(r: CheckResult) -> None:
    assert CheckResult.from_json(r.to_json()) == r


def test_budgets_default_to_the_design() -> None:
    p = CheckParams(budgets={"io": 1.5})
    assert p.budget("io") == 1.5
    assert p.budget("allreduce_performance") == DEFAULT_BUDGETS[CheckType.ALLREDUCE_PERFORMANCE]
    design = {"io": 30, "gpu": 66, "rdma": 25, "allreduce_connection": 122}
    assert {c: DEFAULT_BUDGETS[CheckType(c)] for c in design} == design
    # collectives run one after another, the rest concurrently
    assert p.round_budget(["io", "allreduce_connection", "allreduce_performance"]) == 122 + 182


def test_params_round_trip_and_validation() -> None:
    p = CheckParams(rendezvous=Rendezvous(port=7, rank=1, world_size=2), simulate=("gpu_lost",))
    assert CheckParams.from_dict(p.to_dict()) == p
    assert not p.rendezvous or not p.rendezvous.hosts_store
    with pytest.raises(ParamsError, match="unknown simulated"):
        CheckParams(simulate=("meteor",))
    with pytest.raises(ParamsError, match="unknown parameter"):
        CheckParams.from_dict({"colour": "red"})
    assert simulated_from_env({"AEGIS_SIMULATE": "io_error, gpu_lost"}) == ("gpu_lost", "io_error")
    with pytest.raises(ParamsError):
        simulated_from_env({"AEGIS_SIMULATE": "nope"})


def test_burn_budget_follows_its_length_and_thresholds_are_validated() -> None:
    assert CheckParams(burn_seconds=5).budget("burn") == 5 + DEFAULT_BUDGETS[CheckType.BURN]
    assert CheckParams(burn_seconds=500, budgets={"burn": 2}).budget("burn") == 2
    assert CheckParams(burn_seconds=0.2).round_budget(["burn"]) == pytest.approx(30.2)
    for bad in (
        {"slow_ratio": 0},
        {"slow_ratio": 1.5},
        {"perf_iters": 0},
        {"perf_attempts": 0},
        {"perf_bytes": 0},
        {"burn_seconds": -1},
        {"burn_size": 0},
    ):
        with pytest.raises(ParamsError):
            CheckParams.from_dict(bad)
    assert decode_request(b'{"id": 1, "op": "run", "checks": ["burn"]}').checks == ("burn",)


def test_request_and_response_lines() -> None:
    req = Request(3, "run", "r1", ("io", "hang"), CheckParams(hang_threshold_s=5))
    line = encode_request(req)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode_request(line) == req
    with pytest.raises(ParamsError, match="unknown check"):
        decode_request(b'{"id": 1, "op": "run", "checks": ["x"]}')
    r = CheckResult("io", True, "ok", 1.0, 0.1)
    resp = Response(3, True, 42, (r,), restart=True)
    assert decode_response(encode_response(resp)) == resp
    assert parse_line(b"Warning: not json") is None


def test_store_requests_round_trip_and_are_validated() -> None:
    req = Request(4, "store", store=StoreSpec("10.0.0.1", 29500, 4))
    assert decode_request(encode_request(req)) == req
    assert decode_request(encode_request(Request(5, "run"))).store is None
    for bad in (
        b'{"id": 1, "op": "store", "world_size": 2}',
        b'{"id": 1, "op": "store", "port": 70000, "world_size": 2}',
        b'{"id": 1, "op": "store", "port": 29500, "world_size": 0}',
        b'{"id": 1, "op": "store", "port": "29500", "world_size": 2}',
    ):
        with pytest.raises(ParamsError):
            decode_request(bad)
    assert decode_request(b'{"id": 1, "op": "store", "port": 0, "world_size": 0}').store
