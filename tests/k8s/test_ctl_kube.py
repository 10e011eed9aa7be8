"""Operating a job on Kubernetes: `aegis ctl --kube` with the job's ctl Secret, against kmock,
a real nats-server and a real gRPC credential server; and the controller's /metrics.

The Aegis Controller creates the ctl Secret `<job>-aegis-ctl` (owned by the Aegis CR, created
again if deleted). A ctl credential read from it stops the job; a worker's own credential (from
gRPC with the job's bootstrap token, as a real agent gets it) cannot: the server refuses its
request, and the job goes on until the operator's stop.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from aegis.cli.ctl_config import Plan, UsageError, load_kube_config
from aegis.cli.ctl_send import execute
from aegis.k8s.api import KubeApi
from aegis.k8s.chunked_store import ChunkedStatusStore
from aegis.k8s.cm_wal import Deleter
from aegis.k8s.cr_store import CrStatusStore
from aegis.k8s.errors import ApiError
from aegis.k8s.manifests import CTL_SECRET_KEY, LABEL_CTL, ctl_secret_name
from aegis.k8s.resources import AEGIS, AEGIS_JOB, LABEL_JOB, SECRET
from aegis.protocol.control import make_request
from aegis.runtime.controller.store import PodInfo, Status
from aegis.runtime.errors import BusError

from ..support import AEGIS as AEGIS_CLI
from ..support import wait_for
from .cluster import NAMESPACE, Cluster, aegis_job
from .harness import SUBJECTS, Nats, aegis_cr, running, worker_bus

JOB = "train"


def ctl_secret(cluster: Cluster) -> dict[str, Any] | None:
    try:
        return cluster.api.get(SECRET, NAMESPACE, ctl_secret_name(JOB))
    except ApiError as exc:
        if exc.not_found:
            return None
        raise


def status(cluster: Cluster) -> dict[str, Any]:
    return dict(cluster.aegis(JOB).get("status") or {})


def kubeconfig(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "kmock", "cluster": {"server": url}}],
                "users": [{"name": "op", "user": {}}],
                "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "op"}}],
                "current-context": "kmock",
            }
        )
    )
    return path


async def ctl_cli(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [*AEGIS_CLI, "ctl", "--kube", "--job", JOB, "-n", NAMESPACE]
    argv += ["--kubeconfig", str(kubeconfig(tmp_path, url)), *args]
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    return await asyncio.to_thread(
        subprocess.run, argv, capture_output=True, text=True, timeout=60, env=env
    )


def timeline_cli(
    tmp_path: Path, url: str, job: str, *args: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`aegis timeline aegisjob/JOB` with a kubeconfig for `url`; the run and its HTML."""
    out = tmp_path / "t.html"
    argv = [*AEGIS_CLI, "timeline", f"aegisjob/{job}", "-n", NAMESPACE, "-o", str(out)]
    argv += ["--kubeconfig", str(kubeconfig(tmp_path, url)), *args]
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env), out


async def status_answer(cfg: Any) -> Any:
    """The controller's answer to `status`, once its runner has subscribed (it writes the CR
    status before it subscribes): asked again while nobody is subscribed, for at most 15 s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 15
    while True:
        (answer,) = await execute(cfg, Plan("status", {}, (), 5.0))
        if answer.ok or "not running" not in answer.error or loop.time() > deadline:
            return answer
        await asyncio.sleep(0.05)


async def test_a_ctl_credential_from_the_secret_stops_the_job_a_workers_cannot(
    cluster: Cluster, nats: Nats, tmp_path: Path
) -> None:
    cr = cluster.api.create(AEGIS, NAMESPACE, aegis_cr())
    with running(cluster.url, nats) as r:
        secret = wait_for(lambda: ctl_secret(cluster), 15, "the job's ctl Secret")
        meta = secret["metadata"]
        assert meta["labels"][LABEL_CTL] == "true" and meta["labels"][LABEL_JOB] == JOB
        (owner,) = meta["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == ("Aegis", JOB, cr["metadata"]["uid"])
        body = json.loads(base64.b64decode(secret["data"][CTL_SECRET_KEY]))
        assert body["natsUrl"] == nats.url and body["pods"] == [
            f"{JOB}-worker-0",
            f"{JOB}-worker-1",
        ]
        api = KubeApi.for_url(cluster.url, timeout_s=5.0)
        try:
            first = await status_answer(load_kube_config(api, NAMESPACE, JOB))
        finally:
            api.close()
        assert first.ok and first.result["phase"] == "Pending", first

        # a worker's own credential: the server refuses its stop request, nobody answers it
        bus = await worker_bus(r.grpc, cluster, f"{JOB}-worker-0")
        try:
            with pytest.raises(BusError):
                await bus.request(
                    SUBJECTS.ctl_controller, make_request(NAMESPACE, JOB, "stop"), timeout=2.0
                )
            denied = await bus.wait_permission_denied(5.0)
            assert SUBJECTS.ctl_controller in denied
        finally:
            await bus.close()
        assert not status(cluster).get("shouldQuit") and status(cluster)["phase"] == "Pending"

        # the operator's credential, read from the Secret (the CLI, with a kubeconfig)
        shown = await ctl_cli(tmp_path, cluster.url, "status")
        assert shown.returncode == 0, shown.stderr
        assert f"job {NAMESPACE}/{JOB}: Pending" in shown.stdout
        assert all(len(line) <= 100 for line in shown.stdout.splitlines())
        stopped = await ctl_cli(tmp_path, cluster.url, "--json", "stop")
        assert stopped.returncode == 0, stopped.stderr
        answer = json.loads(stopped.stdout)
        assert answer["ok"] and answer["result"]["accepted"] is True
        wait_for(lambda: status(cluster).get("phase") == "Failed", 15, "the job to end Failed")
        assert status(cluster)["shouldQuit"] is True

        # the job's end is counted on the controller's /metrics
        def failed_counted() -> bool:
            text = urllib.request.urlopen(r.metrics_url, timeout=5).read().decode()
            return 'aegis_jobs_total{event="failed",gpu_type="unknown",worker_num="2"} 1.0' in text

        wait_for(failed_counted, 15, "aegis_jobs_total{event=failed} on /metrics")


async def test_the_ctl_secret_comes_back_and_its_absence_is_explained(
    cluster: Cluster, nats: Nats
) -> None:
    api = KubeApi.for_url(cluster.url, timeout_s=5.0)
    try:
        with pytest.raises(UsageError, match="no Secret team/train-aegis-ctl"):
            load_kube_config(api, NAMESPACE, JOB)
        cluster.api.create(AEGIS, NAMESPACE, aegis_cr())
        with running(cluster.url, nats):
            first = wait_for(lambda: ctl_secret(cluster), 15, "the ctl Secret")
            cfg = load_kube_config(api, NAMESPACE, JOB, nats_url="nats://elsewhere:4222")
            assert (cfg.namespace, cfg.job, cfg.nats_url) == (
                NAMESPACE,
                JOB,
                "nats://elsewhere:4222",
            )
            cluster.api.delete(SECRET, NAMESPACE, ctl_secret_name(JOB))
            again = wait_for(lambda: ctl_secret(cluster), 15, "the ctl Secret created again")
            assert again["metadata"]["uid"] != first["metadata"]["uid"]
            answer = await status_answer(load_kube_config(api, NAMESPACE, JOB))
            assert answer.ok and answer.result["phase"] == "Pending", answer
    finally:
        api.close()


def test_timeline_of_an_aegisjob_from_its_cr_and_the_controllers_fault_log(
    cluster: Cluster, tmp_path: Path
) -> None:
    cluster.api.create(AEGIS_JOB, NAMESPACE, aegis_job(JOB, workers=2))
    cluster.api.create(AEGIS, NAMESPACE, aegis_cr())
    t0 = 1_800_000_000.0
    worker = {"podIP": "", "innerPhase": "RunCommand", "finished": False, "retries": 1}
    cluster.api.patch(
        AEGIS,
        NAMESPACE,
        JOB,
        {
            "status": {
                "phase": "RunCommand",
                "recoverCount": 1,
                "podInfos": {
                    f"{JOB}-worker-0": {**worker, "lastFailedReason": "", "updatedTimestamp": t0},
                    f"{JOB}-worker-1": {
                        **worker,
                        "lastFailedReason": "Troubleshooting: gpu failed: GPU lost",
                        "updatedTimestamp": t0 + 5,
                    },
                },
                "errorNodes": [
                    {"node": "gpu-7", "reason": f"agent {JOB}-worker-1 exited 1", "time": t0 + 6}
                ],
            }
        },
        sub="status",
    )
    r, out = timeline_cli(tmp_path, cluster.url, JOB)
    assert r.returncode == 0, r.stderr
    data = _embedded(out)
    assert data["pods"] == [f"{JOB}-worker-0", f"{JOB}-worker-1"]
    assert data["phase"] == "RunCommand" and data["recoverCount"] == 1
    kinds = [(m["pod"], m["kind"], m["node"]) for m in data["markers"]]
    assert kinds == [
        (f"{JOB}-worker-1", "other", ""),  # the CR keeps a failure's text only: not its kind
        (f"{JOB}-worker-1", "reschedule", "gpu-7"),
    ]

    # with the controller's log: one marker per fault line of this job (others skipped)
    log = tmp_path / "controller.log"
    lines = [
        "2026-11-30 INFO aegis team/train: controller started",
        json.dumps(
            {
                "pod": f"{JOB}-worker-1",
                "message": "error: command exited 1",
                "node": "gpu-7",
                "node_ip": "",
                "pod_ip": "",
                "phase": "RunCommand",
                "time": t0 + 1,
                "kind": "error",
                "level": "1",
                "exit_code": 1,
                "signal": None,
                "rank": 1,
            }
        ),
        json.dumps(
            {
                "pod": f"{JOB}-worker-1",
                "message": "agent exited 1",
                "node": "gpu-7",
                "node_ip": "",
                "pod_ip": "",
                "phase": "Troubleshooting",
                "time": t0 + 6,
                "kind": "reschedule",
                "level": "3",
                "exit_code": 1,
            }
        ),
        json.dumps(
            {
                "pod": "other-worker-0",
                "message": "agent exited 1",
                "node": "gpu-1",
                "node_ip": "",
                "pod_ip": "",
                "phase": "RunCommand",
                "time": t0 + 2,
            }
        ),
    ]
    log.write_text("\n".join(lines) + "\n")
    r, out = timeline_cli(tmp_path, cluster.url, JOB, "--faults", str(log))
    assert r.returncode == 0, r.stderr
    data = _embedded(out)
    assert [(m["kind"], m["level"]) for m in data["markers"]] == [
        ("error", "1"),
        ("reschedule", "3"),
    ]
    # a line written before faults were typed is shown, as `other` (its text is not read)
    old = {k: v for k, v in json.loads(lines[1]).items() if k not in ("kind", "level")}
    log.write_text("\n".join([*lines[:1], json.dumps(old), *lines[2:]]) + "\n")
    r, out = timeline_cli(tmp_path, cluster.url, JOB, "--faults", str(log))
    assert r.returncode == 0, r.stderr
    assert [m["kind"] for m in _embedded(out)["markers"]] == ["other", "reschedule"]

    # a job that does not exist is a clear usage error
    r, _ = timeline_cli(tmp_path, cluster.url, "nope")
    assert r.returncode == 2 and "aegisjob team/nope" in r.stderr


def test_timeline_of_a_job_kept_in_configmaps_shows_every_pod(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The CR of a job too large for it shows a few pods; the timeline reads the snapshot."""
    cluster.api.create(AEGIS_JOB, NAMESPACE, aegis_job(JOB, workers=3))
    cluster.api.create(AEGIS, NAMESPACE, aegis_cr())
    pods = {f"{JOB}-worker-{r}": PodInfo(inner_phase="RunCommand") for r in range(3)}
    pods[f"{JOB}-worker-2"] = PodInfo(
        inner_phase="RunCommand", retries=1, last_failed_reason="exit 1", updated_timestamp=5.0
    )
    status = Status(phase="RunCommand", recover_count=1, pod_infos=pods).with_snapshot()
    deleter = Deleter(cluster.api, NAMESPACE)
    ChunkedStatusStore(cluster.api, CrStatusStore(cluster.api, NAMESPACE, JOB), deleter).save(
        status
    )
    deleter.close()
    assert list(cluster.api.get(AEGIS, NAMESPACE, JOB)["status"]["podInfos"]) == [f"{JOB}-worker-2"]
    r, out = timeline_cli(tmp_path, cluster.url, JOB)
    assert r.returncode == 0, r.stderr
    data = _embedded(out)
    assert data["pods"] == sorted(pods) and data["recoverCount"] == 1


def _embedded(html: Path) -> dict[str, Any]:
    text = html.read_text()
    start = text.index('<script type="application/json" id="timeline-data">') + len(
        '<script type="application/json" id="timeline-data">'
    )
    return dict(json.loads(text[start : text.index("</script>", start)].replace("<\\/", "</")))
