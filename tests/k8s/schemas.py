"""Schema checks: built-in kinds with kubernetes-validate, Aegis kinds with the CRDs' schemas."""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema
import kubernetes_validate

from aegis.k8s.render import load

from .cluster import BASE

K8S_VERSIONS = ("1.30", "1.33")  # the oldest we support (CEL rules GA in 1.29) and a recent one


@cache
def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for crd in load(BASE):
        if crd["kind"] != "CustomResourceDefinition":
            continue
        spec = crd["spec"]
        for version in spec["versions"]:
            api_version = f"{spec['group']}/{version['name']}"
            out[(api_version, spec["names"]["kind"])] = version["schema"]["openAPIV3Schema"]
    return out


def cr_errors(obj: dict[str, Any]) -> list[str]:
    """Why `obj` (an Aegis or AegisJob) breaks its CRD's schema, as `path: message` lines."""
    schema = _crd_schemas()[(obj["apiVersion"], obj["kind"])]
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
    return [f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in errors]


# Volcano's PodGroup (scheduling.volcano.sh/v1beta1) as its CRD declares the spec: the fields
# it knows, each of its type (Volcano's CRD is not installed here; a misspelt field would be
# pruned by a real API server and the gang silently lost)
POD_GROUP: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "scheduling.volcano.sh/v1beta1"},
        "kind": {"const": "PodGroup"},
        "metadata": {"type": "object", "required": ["name", "namespace"]},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["minMember"],
            "properties": {
                "minMember": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
                "minResources": {"type": "object"},
                "minTaskMember": {"type": "object"},
                "priorityClassName": {"type": "string"},
                "queue": {"type": "string"},
                "networkTopology": {"type": "object"},
            },
        },
    },
}


def is_custom(obj: dict[str, Any]) -> bool:
    """True for kinds the CRDs define."""
    return (obj["apiVersion"], obj["kind"]) in _crd_schemas()


def k8s_errors(obj: dict[str, Any], version: str = K8S_VERSIONS[0]) -> list[str]:
    """Why a built-in object breaks the Kubernetes schema (strict: no unknown fields)."""
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        path = ".".join(str(p) for p in exc.absolute_path)
        return [f"{obj['kind']}/{obj['metadata'].get('name')}: {path}: {exc.message}"]
    return []


def all_errors(obj: dict[str, Any]) -> list[str]:
    """Schema errors of any object we make, custom or built-in, for every supported version."""
    if is_custom(obj):
        return cr_errors(obj)
    if obj.get("kind") == "PodGroup":
        validator = jsonschema.Draft202012Validator(POD_GROUP)
        return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(obj)]
    return [e for v in K8S_VERSIONS for e in k8s_errors(obj, v)]
