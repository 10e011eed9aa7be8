"""One job-settings object: one default and one check of each setting, whether it comes from
`aegis run`'s flags, the controller process's environment or a CR's spec."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from aegis.cli import build_parser
from aegis.k8s.aegis_controller import AegisSpec
from aegis.k8s.model import JobView
from aegis.protocol.environment import ConfigError
from aegis.protocol.job_settings import (
    CR_FIELDS,
    DEFAULT_MAX_RETRY,
    ENV_VAR,
    MAX_WORKERS,
    JobSettings,
)

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "base" / "crds"

labels = st.from_regex(r"[a-z]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)
settings = st.builds(
    JobSettings,
    labels,
    labels,
    st.integers(1, MAX_WORKERS),
    st.integers(0, 100),
    st.floats(0, 1e6, allow_nan=False),
    st.floats(0, 1e6, allow_nan=False),
)


def test_max_retry_has_one_default_everywhere() -> None:
    args = build_parser(["run"]).parse_args(["run", "-n", "2", "--", "true"])
    args.workers = int(args.workers)  # -n may say N or MIN:MAX: `aegis run` reads it first
    # the job's name is the launcher's to choose (a unique one) unless --job gives it
    assert JobSettings.from_flags(args) == JobSettings(job="", workers=2)
    assert JobSettings().max_retry == DEFAULT_MAX_RETRY
    crd = yaml.safe_load((CRDS / "aegis.dev_aegisjobs.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["maxRetry"]["default"] == DEFAULT_MAX_RETRY  # the API server's
    job = JobView.from_obj({"metadata": {"name": "j"}, "spec": {"workerNum": 2}})
    assert job.max_retry == DEFAULT_MAX_RETRY
    cr = AegisSpec.from_obj({"metadata": {"name": "j"}, "spec": {"workerNum": 2}})
    assert cr.max_retry == DEFAULT_MAX_RETRY


@given(settings)
def test_settings_reach_the_controller_process_whole(given_settings: JobSettings) -> None:
    assert JobSettings.from_env(given_settings.to_env()) == given_settings


@pytest.mark.parametrize(
    ("change", "flag", "field"),
    [
        ({"workers": 0}, "--nnodes (-n) must be 1 to", "spec.workerNum must be 1 to"),
        ({"workers": MAX_WORKERS + 1}, "must be 1 to 100000, got 100001", "spec.workerNum"),
        ({"max_retry": -1}, "--max-retry must be >= 0, got -1", "spec.maxRetry must be >= 0"),
        ({"heartbeat_timeout": math.inf}, "--heartbeat-timeout inf", "heartbeat timeout inf"),
        ({"heartbeat_rate": -1.0}, "--heartbeat-rate -1.0", "heartbeat rate -1.0"),
        ({"job": "Not_A_Label"}, "--job", "metadata.name"),
    ],
)
def test_one_check_named_as_each_source_names_it(
    change: dict[str, object], flag: str, field: str
) -> None:
    bad = JobSettings(**change)  # type: ignore[arg-type]
    assert flag in (bad.problem() or "") and field in (bad.problem(CR_FIELDS) or "")
    with pytest.raises(ConfigError, match=re.escape(bad.problem() or "?")):
        JobSettings.from_env(bad.to_env())


def test_the_cr_and_the_aegis_job_are_checked_by_the_same_rule() -> None:
    spec: dict[str, object] = {"maxRetry": -2}
    obj = {"metadata": {"name": "train", "namespace": "team"}, "spec": spec}
    want = JobSettings.from_cr("train", "team", spec).problem(CR_FIELDS)
    assert want == f"spec.workerNum must be 1 to {MAX_WORKERS}, got 0"
    assert AegisSpec.from_obj(obj).problem() == want
    assert JobView.from_obj(obj).settings.problem(CR_FIELDS) == want
    spec["workerNum"] = 3
    assert AegisSpec.from_obj(obj).problem() == "spec.maxRetry must be >= 0, got -2"


def test_the_environment_variable_is_named_once() -> None:
    assert set(JobSettings().to_env()) == {ENV_VAR}
