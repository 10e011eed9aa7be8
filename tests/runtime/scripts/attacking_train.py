"""A training command that first tries to act as its agent, then trains as usual.

Run by tests/runtime/test_attack_from_training.py under `aegis run`. It writes what it found
and what it managed to `$ATTACK_REPORT_DIR/rank<RANK>.json`, then runs examples/train_ddp.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def paths_in(values: list[str]) -> list[Path]:
    out = []
    for value in values:
        for part in value.split(os.pathsep):
            if part.startswith("/"):
                out.append(Path(part))
    return out


def ctl_files_reachable(env: dict[str, str]) -> list[str]:
    """ctl.json next to, under, or one level above any path the environment names."""
    found = set()
    for p in paths_in(list(env.values())):
        for d in (p, p.parent, p.parent.parent):
            candidate = d / "ctl.json"
            if candidate.is_file():
                found.add(str(candidate))
    return sorted(found)


def parent_environment() -> dict[str, str]:
    """The agent's initial environment (same OS user: /proc/<ppid>/environ is readable)."""
    try:
        raw = Path(f"/proc/{os.getppid()}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.split("=", 1) for item in raw.decode(errors="replace").split("\0"))
    return {kv[0]: kv[1] for kv in pairs if len(kv) == 2}


async def try_credentials(parent: dict[str, str]) -> list[str]:
    """Ask the credential service for this pod's and another pod's identity."""
    from aegis.runtime.errors import AegisError
    from aegis.runtime.transport.grpc_credentials import request_credentials

    token, target = parent.get("AEGIS_BOOTSTRAP_TOKEN"), parent.get("AEGIS_GRPC")
    if not token or not target:
        return ["no token or credential service in reach"]
    job, ns, pod = parent["AEGIS_JOB"], parent["AEGIS_NAMESPACE"], parent["AEGIS_POD"]
    other = pod[:-1] + ("1" if pod.endswith("0") else "0")
    attempts = [(pod, parent.get("AEGIS_INCARNATION", "")), (pod, "forged"), (other, "forged")]
    outcomes = []
    for target_pod, inc in attempts:
        try:
            await request_credentials(
                target, namespace=ns, job=job, pod_name=target_pod, proof=token,
                incarnation=inc, attempts=1, timeout=5.0,
            )  # fmt: skip
            outcomes.append(f"GRANTED {target_pod}/{inc}")
        except AegisError as exc:
            outcomes.append(f"refused {target_pod}/{inc}: {exc}")
    return outcomes


def main() -> None:
    env = dict(os.environ)
    parent = parent_environment()
    report = {
        "aegis_vars": sorted(k for k in env if k.startswith("AEGIS_")),
        "token_in_env": "AEGIS_BOOTSTRAP_TOKEN" in env,
        "ctl_files": ctl_files_reachable(env),
        "parent_token": bool(parent.get("AEGIS_BOOTSTRAP_TOKEN")),
        "credentials": asyncio.run(try_credentials(parent)),
    }
    out = Path(os.environ["ATTACK_REPORT_DIR"]) / f"rank{os.environ['RANK']}.json"
    out.write_text(json.dumps(report))
    sys.argv = [str(ROOT / "examples" / "train_ddp.py")]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
