"""deploy/: every manifest validates, the CRDs accept the examples and reject bad CRs, RBAC is
least-privilege, and the NATS config runs in a real nats-server with `aegis k8s keys` output."""

from __future__ import annotations

import asyncio
import copy
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from aegis.k8s.errors import RenderError
from aegis.k8s.keys import generate_keys, job_account, key_manifests, load_account, token_sha256
from aegis.k8s.render import dump, load, load_documents
from aegis.runtime.transport.auth import UserCredentials, new_user_keypair
from aegis.runtime.transport.nats_server import can_connect, find_nats_server

from .cluster import BASE, EXAMPLES
from .schemas import all_errors, cr_errors

OBJECTS = load(BASE)
EXAMPLE_OBJECTS = [o for f in sorted(EXAMPLES.glob("*.yaml")) for o in load_documents(f)]


def _named(kind: str, name: str) -> dict[str, Any]:
    return next(o for o in OBJECTS if o["kind"] == kind and o["metadata"]["name"] == name)


@pytest.mark.parametrize(
    "obj", OBJECTS + EXAMPLE_OBJECTS, ids=lambda o: f"{o['kind']}-{o['metadata']['name']}"
)
def test_every_manifest_validates(obj: dict[str, Any]) -> None:
    assert all_errors(obj) == []


def test_base_has_every_component() -> None:
    kinds = {(o["kind"], o["metadata"]["name"]) for o in OBJECTS}
    assert {
        ("CustomResourceDefinition", "aegises.aegis.dev"),
        ("CustomResourceDefinition", "aegisjobs.aegis.dev"),
        ("Deployment", "aegis-job-controller"),
        ("Deployment", "aegis-controller"),
        ("Service", "aegis-controller"),
        ("Deployment", "aegis-nats"),
        ("Service", "aegis-nats"),
        ("ConfigMap", "aegis-nats-config"),
    } <= kinds


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_renderer_matches_kubectl_kustomize() -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(BASE)], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    key = lambda o: (o["kind"], o["metadata"]["name"])  # noqa: E731  kustomize reorders
    assert sorted(yaml.safe_load_all(out), key=key) == sorted(OBJECTS, key=key)


def test_renderer_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\nnamespace: x\n")
    with pytest.raises(RenderError, match="namespace not supported"):
        load(tmp_path)
    assert yaml.safe_load_all(dump(OBJECTS))  # round-trips as YAML


def _schema_nodes(node: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any]]]:
    out = [(path, node)]
    for name, child in (node.get("properties") or {}).items():
        out += _schema_nodes(child, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            out += _schema_nodes(node[key], f"{path}[{key}]")
    return out


@pytest.mark.parametrize("name", ["aegises.aegis.dev", "aegisjobs.aegis.dev"])
def test_crd_schema_is_structural_with_status_and_columns(name: str) -> None:
    crd = _named("CustomResourceDefinition", name)
    (version,) = crd["spec"]["versions"]
    # structural: every node has a type, except int-or-string ones, which must not name one
    nodes = _schema_nodes(version["schema"]["openAPIV3Schema"], "")
    untyped = [p for p, n in nodes if "type" not in n and not n.get("x-kubernetes-int-or-string")]
    assert not [p for p, n in nodes if n.get("x-kubernetes-int-or-string") and "type" in n]
    assert untyped == []
    assert version["subresources"] == {"status": {}}
    columns = {c["name"] for c in version["additionalPrinterColumns"]}
    assert {"Phase", "Workers", "Age"} <= columns


def test_aegis_crd_matches_the_store_json() -> None:
    from aegis.k8s.chunked_store import summary
    from aegis.runtime.controller.store import ErrorNode, PodInfo, Status

    status = Status(
        phase="RunCommand",
        pod_infos={"train-worker-0": PodInfo(pod_ip="10.0.0.1", retries=1)},
        error_nodes=(ErrorNode("n1", "gpu lost", 1.5),),
        worker_seqs={"train-worker-0": 3},
        spec_state={"anything": [1, {"nested": True}]},
    ).with_snapshot()
    cr = copy.deepcopy(next(o for o in EXAMPLE_OBJECTS if o["kind"] == "Aegis"))
    cr["status"] = yaml.safe_load(status.to_json())
    assert cr_errors(cr) == []
    schema = _named("CustomResourceDefinition", "aegises.aegis.dev")["spec"]["versions"][0]
    declared = set(schema["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"])
    # nothing the stores write would be pruned (the whole status, or a job in ConfigMaps'
    # summary); `message` is a runner's that gave up
    pointer = {"generation": 2, "parts": 1, "crc": 7}
    short = json.loads(json.dumps(summary(status, pointer)))
    assert declared == set(cr["status"]) | set(short) | {"message"}
    cr["status"]["message"] = "the status outgrew the CR"
    assert cr_errors(cr) == []
    assert cr_errors({**cr, "status": short}) == []


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("workerNum", 0, "spec.workerNum: 0 is less than the minimum of 1"),
        ("maxRetry", -1, "spec.maxRetry: -1 is less than the minimum of 0"),
        ("workerNum", "3", "spec.workerNum: '3' is not of type 'integer'"),
    ],
)
def test_invalid_aegis_cr_is_rejected_with_a_clear_message(
    field: str, value: object, expected: str
) -> None:
    cr = copy.deepcopy(next(o for o in EXAMPLE_OBJECTS if o["kind"] == "Aegis"))
    cr["spec"][field] = value
    assert cr_errors(cr) == [expected]


def test_invalid_aegis_job_and_status_are_rejected() -> None:
    job = copy.deepcopy(next(o for o in EXAMPLE_OBJECTS if o["kind"] == "AegisJob"))
    job["spec"]["workerNum"] = 0
    job["spec"]["template"]["spec"]["containers"] = []
    assert cr_errors(job) == [
        "spec.template.spec.containers: [] should be non-empty",
        "spec.workerNum: 0 is less than the minimum of 1",
    ]
    cr = copy.deepcopy(next(o for o in EXAMPLE_OBJECTS if o["kind"] == "Aegis"))
    cr["status"]["phase"] = "Running"
    assert cr_errors(cr) == [
        "status.phase: 'Running' is not one of ['Pending', 'BootChecking', 'RunCommand', "
        "'Restarting', 'Troubleshooting', 'Succeed', 'Failed']"
    ]


def _rules(role: str) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in _named("ClusterRole", role)["rules"]:
        for group in rule["apiGroups"]:
            for res in rule["resources"]:
                out.setdefault((group, res), set()).update(rule["verbs"])
    return out


def test_rbac_is_least_privilege() -> None:
    job_ctl, master = _rules("aegis-job-controller"), _rules("aegis-controller")
    assert master == {
        ("aegis.dev", "aegises"): {"get", "list", "watch"},
        ("aegis.dev", "aegises/status"): {"get", "patch"},
        ("", "pods"): {"get", "list", "watch"},
        ("", "secrets"): {"create"},  # the ctl Secrets; create returns only what it wrote
        # an agent's proof: its pod's own service-account token, reviewed
        ("authentication.k8s.io", "tokenreviews"): {"create"},
        # a job too large for its CR: its WAL and snapshots (never updated: created whole)
        ("", "configmaps"): {"get", "list", "create", "delete"},
    }
    # patch: a failed gang's ended pods told to Kueue (kueue.x-k8s.io/retriable-in-group)
    assert job_ctl[("", "pods")] == {"get", "list", "watch", "create", "delete", "patch"}
    # delete: runPolicy.ttlSecondsAfterFinished
    assert job_ctl[("aegis.dev", "aegisjobs")] == {"get", "list", "watch", "patch", "delete"}
    assert job_ctl[("scheduling.volcano.sh", "podgroups")] == {"get", "create", "delete"}
    assert job_ctl[("aegis.dev", "aegises")] == {"get", "list", "watch", "create", "delete"}
    assert job_ctl[("", "secrets")] == {"get", "create", "delete"}
    assert ("aegis.dev", "aegises/status") not in job_ctl  # the CR status is the master's
    assert job_ctl[("aegis.dev", "aegisjobs/finalizers")] == {"update"}  # blockOwnerDeletion
    grants = [(res, v) for rules in (job_ctl, master) for res, v in rules.items()]
    broad = [res for res, verbs in grants if {"*", "escalate", "bind", "impersonate"} & verbs]
    updates = [res for res, verbs in grants if "update" in verbs]
    assert broad == [] and updates == [("aegis.dev", "aegisjobs/finalizers")]
    bindings = {o["metadata"]["name"]: o for o in OBJECTS if o["kind"] == "ClusterRoleBinding"}
    for name in ("aegis-job-controller", "aegis-controller"):
        assert bindings[name]["subjects"] == [
            {"kind": "ServiceAccount", "name": name, "namespace": "aegis-system"}
        ]
        sa = _named("Deployment", name)["spec"]["template"]["spec"]["serviceAccountName"]
        assert sa == name


def test_nats_runs_with_the_configmap_and_generated_keys(tmp_path: Path) -> None:
    keys = generate_keys()
    auth_cm, secret = key_manifests(keys)
    (tmp_path / "nats.conf").write_text(
        _named("ConfigMap", "aegis-nats-config")["data"]["nats.conf"]
    )
    (tmp_path / "auth.conf").write_text(auth_cm["data"]["auth.conf"])
    assert all_errors(auth_cm) == [] and all_errors(secret) == []
    account = load_account(
        secret["stringData"]["account.jwt"], secret["stringData"]["account.seed"].encode()
    )
    job = job_account(account, "team", "train", token_sha256("s3cret"))
    assert job.token_matches("s3cret") and not job.token_matches("guess")
    kp = new_user_keypair()
    worker = UserCredentials(
        job.worker_jwt(kp.public_key.decode(), "train-worker-0", "uid-0"), bytes(kp.seed)
    )
    cmd = [
        find_nats_server(),
        "-c",
        str(tmp_path / "nats.conf"),
        "-p",
        "-1",
        "-m",
        "-1",
        "--ports_file_dir",
        str(tmp_path),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = _client_url(tmp_path, proc)
        stranger = UserCredentials(worker.user_jwt, bytes(new_user_keypair().seed))  # no seed
        checks = [(worker, True), (job.controller_credentials(), True), (stranger, False)]
        assert asyncio.run(_connects(url, [c for c, _ in checks])) == [ok for _, ok in checks]
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr:
            proc.stderr.close()


async def _connects(url: str, creds: list[UserCredentials]) -> list[bool]:
    return [await can_connect(url, c) for c in creds]


def _client_url(directory: Path, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for f in directory.glob("*.ports"):
            ports = json.loads(f.read_text() or "{}")
            if ports.get("nats"):
                return str(ports["nats"][0]).replace("0.0.0.0", "127.0.0.1")
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        time.sleep(0.02)
    raise AssertionError("nats-server wrote no ports file")


def test_job_status_written_by_the_job_controller_fits_the_crd() -> None:
    from aegis.k8s.job_controller import _status_body
    from aegis.k8s.reconcile import UpdateJobStatus

    job = copy.deepcopy(next(o for o in EXAMPLE_OBJECTS if o["kind"] == "AegisJob"))
    action = UpdateJobStatus("Running", "3/3 workers running", "train", ("n1",), 2, ((1, 2),))
    job["status"] = _status_body(action)
    assert job["status"]["containerRestarts"] == {"1": 2}
    assert cr_errors(job) == []
    job["status"]["containerRestarts"] = {"1": -1}
    assert cr_errors(job) == ["status.containerRestarts.1: -1 is less than the minimum of 0"]
