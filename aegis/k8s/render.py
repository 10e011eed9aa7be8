"""A minimal kustomize: concatenate the documents of a kustomization's `resources` (pure).

It supports exactly what `deploy/base` uses (files and sub-directories listed under
`resources`) and refuses anything else, so its output never silently differs from
`kubectl kustomize`. Real overlays (images, patches, namespace) need real kustomize.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from aegis.k8s.errors import RenderError

KUSTOMIZATION = "kustomization.yaml"
_SUPPORTED = frozenset({"apiVersion", "kind", "resources"})


def load(directory: str | Path) -> list[dict[str, Any]]:
    """Every object of the kustomization in `directory`, in `resources` order."""
    root = Path(directory)
    spec = _read_kustomization(root / KUSTOMIZATION)
    objects: list[dict[str, Any]] = []
    for entry in spec.get("resources") or []:
        path = root / str(entry)
        if path.is_dir():
            objects += load(path)
        elif path.is_file():
            objects += load_documents(path)
        else:
            raise RenderError(f"{root / KUSTOMIZATION}: resource {entry!r} does not exist")
    return objects


def load_documents(path: str | Path) -> list[dict[str, Any]]:
    """The non-empty YAML documents of one file; each must be a Kubernetes object."""
    try:
        docs = list(yaml.safe_load_all(Path(path).read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError) as exc:
        raise RenderError(f"{path}: cannot read YAML: {exc}") from None
    objects = [d for d in docs if d is not None]
    for i, obj in enumerate(objects):
        if not isinstance(obj, dict) or not {"apiVersion", "kind", "metadata"} <= obj.keys():
            raise RenderError(f"{path}: document {i} is not a Kubernetes object")
    return objects


def render(directory: str | Path) -> str:
    """The kustomization as one multi-document YAML stream."""
    return dump(load(directory))


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings (config files in ConfigMaps) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(objects: list[dict[str, Any]]) -> str:
    """Objects as a multi-document YAML stream, keys in their written order."""
    return yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, default_flow_style=False)


def _read_kustomization(path: Path) -> dict[str, Any]:
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise RenderError(f"{path}: cannot read kustomization: {exc}") from None
    if not isinstance(spec, dict):
        raise RenderError(f"{path}: not a mapping")
    unsupported = sorted(spec.keys() - _SUPPORTED)
    if unsupported:
        raise RenderError(
            f"{path}: {', '.join(unsupported)} not supported by the built-in renderer; "
            "use `kubectl kustomize`"
        )
    return spec
