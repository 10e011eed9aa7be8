"""The operations manifests: /metrics on a named port with scrape annotations, the optional
ServiceMonitor component, and the aegis-operator role that alone may read ctl Secrets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from aegis.k8s.render import load

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "deploy" / "base"
MONITORING = ROOT / "deploy" / "components" / "monitoring"
OBJECTS = load(BASE)
SCRAPE = {"prometheus.io/scrape": "true", "prometheus.io/port": "9400"}


def named(kind: str, name: str) -> dict[str, Any]:
    (obj,) = [o for o in OBJECTS if o["kind"] == kind and o["metadata"]["name"] == name]
    return obj


def test_the_controller_serves_metrics_on_a_named_port_with_scrape_annotations() -> None:
    deploy = named("Deployment", "aegis-controller")
    pod = deploy["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert {"name": "metrics", "containerPort": 9400, "protocol": "TCP"} in container["ports"]
    args = container["command"]
    assert args[args.index("--metrics-port") + 1] == "9400"
    assert SCRAPE.items() <= pod["metadata"]["annotations"].items()
    svc = named("Service", "aegis-controller")
    assert SCRAPE.items() <= svc["metadata"]["annotations"].items()
    (port,) = [p for p in svc["spec"]["ports"] if p["name"] == "metrics"]
    assert (port["port"], port["targetPort"]) == (9400, "metrics")


def test_the_monitoring_component_scrapes_that_port() -> None:
    kust = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    assert kust["kind"] == "Component" and kust["apiVersion"].startswith("kustomize.config.k8s.io/")
    (monitor,) = [yaml.safe_load((MONITORING / r).read_text()) for r in kust["resources"]]
    assert (monitor["apiVersion"], monitor["kind"]) == (
        "monitoring.coreos.com/v1",
        "ServiceMonitor",
    )
    svc = named("Service", "aegis-controller")
    assert monitor["metadata"]["namespace"] == svc["metadata"]["namespace"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    ports = {p["name"] for p in svc["spec"]["ports"]}
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
    assert "metrics" in ports and monitor["spec"]["endpoints"][0]["path"] == "/metrics"


def secret_readers() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for role in (o for o in OBJECTS if o["kind"] in ("ClusterRole", "Role")):
        for rule in role.get("rules", []):
            if "" in rule["apiGroups"] and "secrets" in rule["resources"]:
                out.setdefault(role["metadata"]["name"], set()).update(rule["verbs"])
    return out


def test_only_the_operator_role_and_the_job_controller_can_read_secrets() -> None:
    readers = {r for r, verbs in secret_readers().items() if {"get", "list", "watch"} & verbs}
    assert readers == {"aegis-operator", "aegis-job-controller"}
    assert secret_readers()["aegis-operator"] == {"get"}  # by name only: no list, no watch
    assert secret_readers()["aegis-controller"] == {"create"}
    op = named("ClusterRole", "aegis-operator")
    grants = {
        (g, r): set(rule["verbs"])
        for rule in op["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
    }
    assert grants[("aegis.dev", "aegisjobs")] == {"get", "list", "watch"}
    assert grants[("", "pods/exec")] == {"create"}
    assert not [k for k, v in grants.items() if {"*", "update", "patch", "delete"} & v]
    # nobody is bound to it by default: the cluster's admin binds the people who operate jobs
    bound = [
        o
        for o in OBJECTS
        if o["kind"].endswith("Binding") and o["roleRef"]["name"] == "aegis-operator"
    ]
    assert bound == []
