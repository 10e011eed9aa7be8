"""The objects the Job Controller builds: the agent contract, anti-affinity, schema validity."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.k8s.keys import token_sha256
from aegis.k8s.manifests import (
    PodSettings,
    aegis_cr,
    bootstrap_secret,
    exclude_nodes,
    secret_token,
    template_problem,
    worker_pod,
    workers_service,
)
from aegis.k8s.model import AegisView, JobView, Observed, PodView
from aegis.k8s.reconcile import CreatePod, UpdateJobStatus, reconcile, wake_after
from aegis.protocol.environment import AgentConfig, user_env

from .schemas import all_errors
from .test_reconcile import TEMPLATE, job

SETTINGS = PodSettings(controller_address="ctl.aegis-system.svc:50051")


def _env(pod: dict) -> dict[str, object]:
    return {
        e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][0]["env"]
    }


def test_worker_pod_runs_the_agent_with_the_contract_env() -> None:
    template: dict[str, Any] = {
        "metadata": {"labels": {"team": "ml"}, "annotations": {"a": "b"}},
        "spec": {
            "containers": [
                {
                    "name": "t",
                    "image": "i",
                    "command": ["python", "t.py"],
                    "args": ["--lr", "1"],
                    "env": [
                        {"name": "AEGIS_RANK", "value": "spoofed"},
                        {"name": "KEEP", "value": "1"},
                    ],
                },
                {"name": "sidecar", "image": "s"},
            ],
            "restartPolicy": "Always",
        },
    }
    pod = worker_pod(job(template=template), 2, (), SETTINGS)
    main, sidecar = pod["spec"]["containers"]
    assert main["command"] == ["aegis", "agent"]
    assert main["args"] == ["--", "python", "t.py", "--lr", "1"]
    assert sidecar == template["spec"]["containers"][1]
    assert _env(pod) == {
        "KEEP": "1",
        "AEGIS_JOB": "train",
        "AEGIS_NAMESPACE": "team",
        "AEGIS_POD": "train-worker-2",
        "AEGIS_RANK": "2",
        "AEGIS_WORLD_SIZE": "3",
        "AEGIS_GRPC": "ctl.aegis-system.svc:50051",
        "AEGIS_NPROC_PER_NODE": "1",
        "MASTER_ADDR": "train-worker-0.train-workers.team.svc",
        "MASTER_PORT": "29500",
        "AEGIS_MASTER_ADDR": "train-worker-0.train-workers.team.svc",
        "AEGIS_MASTER_PORT": "29500",
        "AEGIS_TOKEN_FILE": "/var/run/secrets/aegis/token",  # the pod's own token: its proof
        "AEGIS_NODE": {"fieldRef": {"fieldPath": "spec.nodeName"}},
        "AEGIS_INCARNATION": {"fieldRef": {"fieldPath": "metadata.uid"}},
        "AEGIS_POD_IP": {"fieldRef": {"fieldPath": "status.podIP"}},
        "AEGIS_NODE_IP": {"fieldRef": {"fieldPath": "status.hostIP"}},
        "AEGIS_CONTAINER_RESTARTS": "0",
    }
    meta = pod["metadata"]
    assert meta["labels"] == {
        "team": "ml",
        "aegis.dev/job": "train",
        "aegis.dev/rank": "2",
        "app.kubernetes.io/managed-by": "aegis-job-controller",
    }
    assert meta["annotations"] == {"a": "b"}
    assert meta["ownerReferences"] == [job().owner_reference()]
    assert pod["spec"]["restartPolicy"] == "Never"
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (
        "train-worker-2",
        "train-workers",
    )
    assert "affinity" not in pod["spec"]
    assert all_errors(pod) == []
    assert PodView.from_obj(pod).rank == 2


def test_excluded_nodes_become_required_node_anti_affinity() -> None:
    pod = worker_pod(job(), 0, ("bad-2", "bad-1"), SETTINGS)
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms["nodeSelectorTerms"] == [
        {
            "matchFields": [
                {"key": "metadata.name", "operator": "NotIn", "values": ["bad-1", "bad-2"]}
            ]
        }
    ]
    assert all_errors(pod) == []


def test_exclusion_is_added_to_every_user_term_and_keeps_the_rest() -> None:
    zone = {"key": "zone", "operator": "In", "values": ["a"]}
    user: dict[str, Any] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [zone]}, {"matchFields": []}]
            }
        },
        "podAntiAffinity": {"x": 1},
    }
    out = exclude_nodes(user, ["n1"])
    rule = {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}
    terms = out["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [{"matchExpressions": [zone], "matchFields": [rule]}, {"matchFields": [rule]}]
    assert out["podAntiAffinity"] == {"x": 1}
    assert user["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ][0] == {"matchExpressions": [zone]}  # the template is not modified
    assert exclude_nodes(None, []) == {}


def test_cr_secret_and_service_validate_and_carry_no_token() -> None:
    view = job()
    secret = bootstrap_secret(view, "tok-en")
    cr = aegis_cr(view, token_sha256("tok-en"))
    service = workers_service(view, SETTINGS)
    for obj in (secret, cr, service):
        assert all_errors(obj) == []
        assert obj["metadata"]["ownerReferences"] == [view.owner_reference()]
    assert secret_token(secret) == "tok-en"
    assert "tok-en" not in str(cr)
    assert cr["spec"] == {
        "jobName": "train",
        "namespace": "team",
        "workerNum": 3,
        "maxRetry": 2,
        "bootstrapTokenSHA256": token_sha256("tok-en"),
    }
    assert service["spec"]["clusterIP"] == "None"


def test_job_view_reads_defaults_and_status() -> None:
    obj = {
        "metadata": {"name": "j", "namespace": "ns", "uid": "u", "finalizers": ["x"]},
        "spec": {"workerNum": 2, "template": TEMPLATE},
        "status": {"phase": "Running", "excludedNodes": ["n"], "podRestarts": 4},
    }
    view = JobView.from_obj(obj)
    assert view == dataclasses.replace(
        view, worker_num=2, max_retry=3, finalizers=("x",), excluded_nodes=("n",), pod_restarts=4
    )


def test_the_worker_pod_contract_is_what_the_agent_reads() -> None:
    """The env and args the Job Controller gives a pod configure `aegis agent` completely."""
    import json

    from aegis.cli import build_parser
    from aegis.runtime.agent.service import AgentConfig

    template: dict[str, Any] = {
        "spec": {"containers": [{"name": "t", "image": "i", "command": ["python", "t.py"]}]}
    }
    pod = worker_pod(job(template=template), 1, (), SETTINGS)
    main = pod["spec"]["containers"][0]
    resolved = {
        "spec.nodeName": "node-a",
        "metadata.uid": "uid-1",
        "status.podIP": "10.1.2.3",
        "status.hostIP": "10.0.0.7",
    }
    env = {
        e["name"]: e["value"] if "value" in e else resolved[e["valueFrom"]["fieldRef"]["fieldPath"]]
        for e in main["env"]
    }
    # the pod's own service-account token, projected where the agent is told to read it
    [mount] = [m for m in main["volumeMounts"] if m["name"] == "aegis-token"]
    [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == "aegis-token"]
    projected = volume["projected"]["sources"][0]["serviceAccountToken"]
    assert projected["audience"] == "aegis" and mount["readOnly"]
    assert env["AEGIS_TOKEN_FILE"] == f"{mount['mountPath']}/{projected['path']}"
    args = build_parser().parse_args([*main["command"][1:], *main["args"]])
    cmd = [c for c in args.cmd if c != "--"]
    cfg = AgentConfig.from_env({**env, "AEGIS_COMMAND": json.dumps(cmd)})
    assert cfg.command == ("python", "t.py")
    assert cfg.grpc_target == "ctl.aegis-system.svc:50051"
    assert (cfg.pod, cfg.rank, cfg.world_size) == ("train-worker-1", 1, 3)
    assert (cfg.node, cfg.incarnation, cfg.token) == ("node-a", "uid-1", "")  # no shared token
    assert (cfg.pod_ip, cfg.node_ip) == ("10.1.2.3", "10.0.0.7")


def test_level2_count_reaches_the_agent_and_round_trips_through_the_status() -> None:
    pod = worker_pod(job(), 1, (), SETTINGS, container_restarts=2)
    assert _env(pod)["AEGIS_CONTAINER_RESTARTS"] == "2"
    view = JobView.from_obj(
        {
            "metadata": {"name": "train", "namespace": "team"},
            "spec": {"workerNum": 3},
            "status": {"containerRestarts": {"1": 2, "2": "x", "-1": 3, "y": 1, "0": True}},
        }
    )
    assert view.container_restarts == ((1, 2),) and view.container_restarts_of(1) == 2
    assert view.container_restarts_of(0) == 0


@pytest.mark.parametrize(("value", "ok"), [(1, True), (8, True), ("auto", True), ("4", True),
                                           (0, False), (-2, False), ("many", False)])  # fmt: skip
def test_nproc_per_node_is_validated_and_told_to_the_agent(value: object, ok: bool) -> None:
    view = JobView.from_obj(
        {"metadata": {"name": "train", "namespace": "team"},
         "spec": {"workerNum": 2, "nprocPerNode": value, "template": {
             "spec": {"containers": [{"name": "t", "image": "i", "command": ["python"]}]}}}}
    )  # fmt: skip
    problem = template_problem(view)
    if not ok:
        assert problem is not None and "spec.nprocPerNode" in problem
        return
    assert problem is None
    env = _env(worker_pod(view, 0, (), SETTINGS))
    assert env["AEGIS_NPROC_PER_NODE"] == str(value)


def test_the_templates_standby_settings_reach_the_agent_and_not_the_command() -> None:
    """AEGIS_STANDBY / AEGIS_PRELOAD in the template are the user's way to turn standbys on
    (docs/restart.md): the pod keeps them, the agent reads them, the command never sees them."""
    container = {
        **TEMPLATE["spec"]["containers"][0],
        "env": [
            {"name": "AEGIS_STANDBY", "value": "on"},
            {"name": "AEGIS_PRELOAD", "value": "torch,numpy"},
        ],
    }
    pod = worker_pod(job(template={"spec": {"containers": [container]}}), 0, (), SETTINGS)
    env = {k: v for k, v in _env(pod).items() if isinstance(v, str)}
    cfg = AgentConfig.from_env({**env, "AEGIS_COMMAND": '["python", "t.py"]'})
    assert cfg.standby and cfg.preload == ("torch", "numpy")
    assert "AEGIS_STANDBY" not in user_env(env) and "AEGIS_PRELOAD" not in user_env(env)


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ({"spec": False}, "spec.template.spec must be an object"),
        ({"spec": [{"containers": []}]}, "spec.template.spec must be an object"),
        ({"spec": None}, "spec.template.spec must be an object"),
        ({**TEMPLATE, "metadata": ["x"]}, "spec.template.metadata"),
        ({**TEMPLATE, "metadata": {"labels": "team=a"}}, "labels and annotations"),
    ],
)
def test_a_template_of_the_wrong_shape_fails_the_job_saying_why(
    template: dict[str, Any], why: str
) -> None:
    """Without the CRD's schema (an older CRD) such an AegisJob reached the renderer, which
    raised on it at every reconcile, and the job never said why."""
    bad = job(template=template, aegis_ref="", finalizers=())
    assert why in (template_problem(bad) or "")
    actions = reconcile(bad, Observed(pods=[], aegis=None, secret=False, service=False))
    failed = [a for a in actions if isinstance(a, UpdateJobStatus)]
    assert failed and failed[0].phase == "Failed" and why in failed[0].message


def test_a_template_whose_labels_are_null_is_a_template_without_labels() -> None:
    template = {**TEMPLATE, "metadata": {"labels": None, "annotations": None}}
    assert template_problem(job(template=template)) is None
    assert worker_pod(job(template=template), 0, (), PodSettings())["metadata"]["labels"]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=5,
)
_FIELDS = [("metadata", "name"), ("metadata", "deletionTimestamp"), ("spec", "workerNum"),
           ("spec", "maxRetry"), ("spec", "nprocPerNode"), ("spec", "template"),
           ("spec", "template", "spec"), ("spec", "template", "metadata"),
           ("spec", "template", "spec", "containers"), ("status", "phase"),
           ("status", "excludedNodes"), ("status", "containerRestarts"),
           ("metadata", "labels"), ("metadata", "labels", "kueue.x-k8s.io/queue-name"),
           ("spec", "runPolicy"), ("spec", "runPolicy", "cleanPodPolicy"),
           ("spec", "runPolicy", "ttlSecondsAfterFinished"),
           ("spec", "runPolicy", "activeDeadlineSeconds"),
           ("spec", "runPolicy", "schedulingPolicy"),
           ("spec", "runPolicy", "schedulingPolicy", "gang"),
           ("spec", "runPolicy", "schedulingPolicy", "queue"),
           ("spec", "template", "spec", "schedulerName"),
           ("status", "startTime"), ("status", "completionTime"), ("status", "reason")]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_FIELDS), _json), max_size=4))
def test_any_aegisjob_is_run_or_refused_without_raising(edits: list[tuple[Any, Any]]) -> None:
    """An AegisJob with any field of any JSON shape (what a cluster without the CRD's schema
    lets through): the Job Controller's reconcile decides something, or fails the job."""
    obj: dict[str, Any] = {
        "metadata": {"name": "train", "namespace": "team", "uid": "u1"},
        "spec": {"workerNum": 2, "maxRetry": 1, "template": copy.deepcopy(TEMPLATE)},
    }
    for path, value in edits:
        at = obj
        for key in path[:-1]:
            if not isinstance(at.get(key), dict):
                at[key] = {}
            at = at[key]
        at[path[-1]] = value
    view = JobView.from_obj(obj)
    for observed in (
        Observed(pods=[], aegis=None, secret=False, service=False),
        Observed(pods=[], aegis=AegisView(phase="RunCommand"), secret=True, service=True),
        Observed(pods=[], aegis=None, now=1767225600.0),
    ):
        for action in reconcile(view, observed):
            if isinstance(action, CreatePod):  # what the I/O layer builds from it
                worker_pod(view, action.rank, action.excluded_nodes, SETTINGS)
        wake_after(view, 1767225600.0)


def _policed(policy: dict[str, Any], labels: dict[str, str] | None = None, **pod: Any) -> JobView:
    template = copy.deepcopy(TEMPLATE)
    template["spec"].update(pod)
    obj = {
        "metadata": {"name": "train", "namespace": "team", "uid": "u1", "labels": labels or {}},
        "spec": {"workerNum": 3, "maxRetry": 1, "template": template, "runPolicy": policy},
    }
    return JobView.from_obj(obj)


def test_kueue_gang_labels_every_worker_pod_into_one_group_of_the_jobs_size() -> None:
    """As a Kubeflow user labels a PyTorchJob: the queue label on the AegisJob is gang
    scheduling with Kueue's plain-pod groups; schedulerName passes through; the priority
    class goes to the pods."""
    view = _policed(
        {"schedulingPolicy": {"priorityClass": "train-high"}},
        {"kueue.x-k8s.io/queue-name": "team-a"},
        schedulerName="my-scheduler",
    )
    assert template_problem(view) is None
    pod = worker_pod(view, 2, (), SETTINGS)
    assert all_errors(pod) == []
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert meta["labels"]["kueue.x-k8s.io/pod-group-name"] == "train"
    assert meta["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == "3"
    assert spec["priorityClassName"] == "train-high" and spec["schedulerName"] == "my-scheduler"


def test_volcano_gang_names_the_pod_group_and_the_scheduler() -> None:
    view = _policed({"schedulingPolicy": {"gang": "Volcano", "queue": "research"}})
    pod = worker_pod(view, 0, (), SETTINGS)
    assert all_errors(pod) == []
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "train"
    assert "kueue.x-k8s.io/queue-name" not in pod["metadata"]["labels"]


def test_without_a_run_policy_the_pod_is_the_templates() -> None:
    pod = worker_pod(_policed({}, priorityClassName="p", schedulerName="s"), 0, (), SETTINGS)
    assert (pod["spec"]["priorityClassName"], pod["spec"]["schedulerName"]) == ("p", "s")
    assert "annotations" not in pod["metadata"]


@pytest.mark.parametrize(
    ("policy", "labels", "pod", "why"),
    [
        ({"cleanPodPolicy": "Always"}, {}, {}, "cleanPodPolicy must be one of None, Running"),
        ({"ttlSecondsAfterFinished": -1}, {}, {}, "ttlSecondsAfterFinished must be an integer"),
        ({"activeDeadlineSeconds": 0}, {}, {}, "activeDeadlineSeconds must be an integer >= 1"),
        ({"activeDeadlineSeconds": True}, {}, {}, "activeDeadlineSeconds must be an integer"),
        ({"schedulingPolicy": {"gang": "Yunikorn"}}, {}, {}, "gang must be one of"),
        (
            {"schedulingPolicy": {"gang": "Kueue"}},
            {},
            {},
            "gang Kueue needs a LocalQueue in spec.runPolicy.schedulingPolicy.queue",
        ),
        (
            {"schedulingPolicy": {"queue": "b"}},
            {"kueue.x-k8s.io/queue-name": "a"},
            {},
            "kueue.x-k8s.io/queue-name=a names another queue than",
        ),
        (
            {"schedulingPolicy": {"gang": "Volcano"}},
            {},
            {"schedulerName": "default-scheduler"},
            "gang Volcano needs schedulerName 'volcano'",
        ),
        (
            {"schedulingPolicy": {"priorityClass": "a"}},
            {},
            {"priorityClassName": "b"},
            "priorityClass 'a' and the template's priorityClassName 'b' differ",
        ),
    ],
)
def test_a_run_policy_that_cannot_be_followed_fails_the_job_saying_why(
    policy: dict[str, Any], labels: dict[str, str], pod: dict[str, Any], why: str
) -> None:
    view = _policed(policy, labels, **pod)
    assert why in (template_problem(view) or "")
    (failed,) = [a for a in reconcile(view, Observed()) if isinstance(a, UpdateJobStatus)]
    assert failed.phase == "Failed" and failed.reason == "InvalidSpec" and why in failed.message


def test_a_pods_exit_code_and_termination_message_are_read() -> None:
    pod = worker_pod(job(), 1, (), SETTINGS)
    container = pod["spec"]["containers"][0]["name"]
    long = "the command cannot start: " + "x" * 1000
    pod["status"] = {
        "phase": "Failed",
        "containerStatuses": [
            {"name": "other", "state": {"terminated": {"exitCode": 1, "message": "no"}}},
            {"name": container, "state": {"terminated": {"exitCode": 78, "message": long}}},
        ],
    }
    seen = PodView.from_obj(pod)
    assert seen.exit_code == 78 and seen.message == long[:400]
    pod["status"]["containerStatuses"][1]["state"] = {"running": {}}
    assert PodView.from_obj(pod).exit_code is None and PodView.from_obj(pod).message == ""
