"""`aegis k8s render | keys | job-controller --once`, through the module's register()."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from aegis.cli import k8s as k8s_cli
from aegis.k8s.render import load
from aegis.k8s.resources import AEGIS_JOB

from .cluster import BASE, NAMESPACE, Cluster, aegis_job
from .schemas import all_errors


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="aegis")
    k8s_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_render_prints_the_base(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["k8s", "render", str(BASE)]) == 0
    assert list(yaml.safe_load_all(capsys.readouterr().out)) == load(BASE)


def test_keys_prints_a_configmap_and_a_secret(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["k8s", "keys", "--namespace", "ops"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [(d["kind"], d["metadata"]["name"], d["metadata"]["namespace"]) for d in docs] == [
        ("ConfigMap", "aegis-nats-auth", "ops"),
        ("Secret", "aegis-nats-account", "ops"),
    ]
    assert "resolver: MEMORY" in docs[0]["data"]["auth.conf"]
    assert docs[1]["stringData"]["account.seed"].startswith("SA")
    assert all(all_errors(d) == [] for d in docs)


def test_job_controller_once_with_a_kubeconfig(cluster: Cluster, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "kmock",
                "clusters": [{"name": "kmock", "cluster": {"server": cluster.url.rstrip("/")}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "u"}}],
            }
        )
    )
    cluster.api.create(AEGIS_JOB, NAMESPACE, aegis_job(workers=2))
    argv = [
        "k8s",
        "job-controller",
        "--kubeconfig",
        str(kubeconfig),
        "--once",
        "--controller-address",
        "c:1",
    ]
    assert _run(argv) == 0
    assert sorted(cluster.pods()) == ["train-worker-0", "train-worker-1"]


@pytest.mark.parametrize(
    ("command", "flag", "bad"),
    [
        *(("controller", "--max-object-bytes", bad) for bad in ("10", "lots", "-1")),
        *(("job-controller", "--pod-calls", bad) for bad in ("0", "65", "many")),
        *(("job-controller", "--reconcile-workers", bad) for bad in ("0", "65", "some")),
    ],
)
def test_a_size_out_of_range_is_a_clear_error(
    command: str, flag: str, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # an object size no API server has; more pod calls than the client's pooled connections
    with pytest.raises(SystemExit) as exc:
        _run(["k8s", command, flag, bad])
    assert exc.value.code == 2
    assert flag in capsys.readouterr().err


def test_the_controller_takes_the_api_servers_object_limit() -> None:
    parser = argparse.ArgumentParser(prog="aegis")
    k8s_cli.register(parser.add_subparsers(dest="command", required=True))
    assert parser.parse_args(["k8s", "controller"]).max_object_bytes == 1_572_864
    args = parser.parse_args(["k8s", "controller", "--max-object-bytes", "8388608"])
    assert args.max_object_bytes == 8 << 20


def test_the_job_controller_takes_its_pod_calls() -> None:
    parser = argparse.ArgumentParser(prog="aegis")
    k8s_cli.register(parser.add_subparsers(dest="command", required=True))
    assert parser.parse_args(["k8s", "job-controller"]).pod_calls == 32
    assert parser.parse_args(["k8s", "job-controller", "--pod-calls", "64"]).pod_calls == 64
    assert parser.parse_args(["k8s", "job-controller"]).reconcile_workers == 4
    args = parser.parse_args(["k8s", "job-controller", "--reconcile-workers", "1"])
    assert args.reconcile_workers == 1
