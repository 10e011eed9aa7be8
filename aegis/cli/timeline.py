"""`aegis timeline SOURCE [-o FILE.html|FILE.png|FILE.svg]`: a picture of a run.

SOURCE is a state dir of `aegis run`, a step log (steps.jsonl), or on Kubernetes
`aegisjob/NAME` (with `-n NS`, `--kubeconfig`, `--context`; `--faults FILE` adds the Aegis
Controller's fault lines, e.g. `kubectl logs deploy/aegis-controller -n aegis-system`).
Without `-o`: `<state dir>/timeline.html`, beside the step log, or `./NAME-timeline.html`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

KUBE_PREFIXES = ("aegisjob/", "aegisjobs/", "aegisjob.aegis.dev/")


def register(sub: Any) -> None:
    """Add the top-level `timeline` subcommand."""
    p = sub.add_parser(
        "timeline",
        help="draw a run: one row per pod, phases over time, faults and recoveries",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("source", metavar="SOURCE", help="state dir, step log, or aegisjob/NAME")
    p.add_argument("-o", "--output", type=Path, help="FILE.html (default), FILE.png or FILE.svg")
    p.add_argument("-n", "--namespace", default="default", help="(aegisjob/NAME) its namespace")
    p.add_argument("--kubeconfig", default=None, help="(aegisjob/NAME) kubeconfig file")
    p.add_argument("--context", default=None, help="(aegisjob/NAME) kubeconfig context")
    p.add_argument(
        "--faults", type=Path, help="(aegisjob/NAME) a fault log: JSON lines, other lines skipped"
    )
    p.set_defaults(func=_timeline)


def _timeline(args: argparse.Namespace) -> int:
    from aegis.timeline import FORMATS, TimelineError, load, write

    source: str = args.source
    out: Path | None = args.output
    if out is not None and out.suffix.lower() not in FORMATS:
        print(f"aegis: error: -o {out}: use a .html, .png or .svg file", file=sys.stderr)
        return 2
    try:
        if source.startswith(KUBE_PREFIXES):
            name = source.split("/", 1)[1]
            tl = _from_kube(args, name)
            out = out or Path(f"{name}-timeline.html")
        else:
            tl = load(source)
            path = Path(source)
            default = path / "timeline.html" if path.is_dir() else path.with_name("timeline.html")
            out = out or default
        write(tl, out)
    except TimelineError as exc:
        print(f"aegis: error: {exc}", file=sys.stderr)
        return 2
    print(out)
    return 0


def _fault_records(path: Path) -> list[dict[str, Any]]:
    """The fault records in a file of pods' logs (`--faults`): its lines that are JSON
    objects with a pod, a message and a time."""
    from aegis.timeline.model import TimelineError

    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise TimelineError(f"--faults {path}: {exc}") from None
    faults = []
    for line in (raw.strip() for raw in lines):
        try:
            obj = json.loads(line) if line.startswith("{") else None
        except ValueError:
            continue
        if isinstance(obj, dict) and {"pod", "message", "time"} <= set(obj):
            faults.append(obj)
    return faults


def _from_kube(args: argparse.Namespace, name: str) -> Any:
    from aegis.k8s.api import KubeApi
    from aegis.k8s.chunked_store import read_snapshot
    from aegis.k8s.errors import ApiError
    from aegis.k8s.resources import AEGIS, AEGIS_JOB
    from aegis.runtime.errors import CorruptStatusError
    from aegis.timeline.model import TimelineError, from_cr_status

    faults = _fault_records(args.faults) if args.faults is not None else []
    try:
        api = KubeApi.from_config(args.kubeconfig, args.context)
        try:
            api.get(AEGIS_JOB, args.namespace, name)
            cr = api.get(AEGIS, args.namespace, name)
            status = dict(cr.get("status") or {})
            found = read_snapshot(api, args.namespace, cr)  # a job too large for its CR
            if found is not None:
                status = {**status, **found[1].to_obj()}
        finally:
            api.close()
    except (ApiError, CorruptStatusError) as exc:
        raise TimelineError(f"aegisjob {args.namespace}/{name}: {exc}") from None
    return from_cr_status(name, args.namespace, status, dict(cr.get("spec") or {}), faults)
