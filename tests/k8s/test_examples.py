"""The Kubernetes path as the docs write it: the package name users install, the example
image (examples/Dockerfile) and the example AegisJobs, each building worker pods that
validate; the CPU example's command, run as its pod runs it (gloo, no GPU)."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from aegis.k8s.manifests import PodSettings, pod_group, template_problem, worker_pod
from aegis.k8s.model import JobView
from aegis.k8s.render import load_documents

from .cluster import EXAMPLES, REPO
from .schemas import all_errors

EXAMPLE_JOBS = [
    o for f in sorted(EXAMPLES.glob("*.yaml")) for o in load_documents(f) if o["kind"] == "AegisJob"
]
CPU_EXAMPLE = next(o for o in EXAMPLE_JOBS if o["metadata"]["name"] == "ddp-example")
IMAGE_DOCKERFILE = REPO / "examples" / "Dockerfile"
# what users read: a command there is run as written
USER_TEXT = [REPO / "README.md", REPO / "Dockerfile", IMAGE_DOCKERFILE, *REPO.glob("docs/*.md")]
USER_TEXT += sorted(EXAMPLES.glob("*.yaml"))


def test_the_distribution_is_not_the_unrelated_aegis_of_pypi() -> None:
    """`aegis` on PyPI is another project: the distribution is aegis-ft (the import package
    and the command stay `aegis`), and no text a user follows says `pip install aegis`, but
    to warn against it."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == "aegis-ft"
    assert project["scripts"] == {"aegis": "aegis.cli:main"}
    bare = re.compile(r"pip3? install (-U |--upgrade )?aegis(?![-\w.])")
    said = [
        f"{path.relative_to(REPO)}: {line.strip()}"
        for path in USER_TEXT
        for line in path.read_text().splitlines()
        if bare.search(line) and "unrelated" not in line
    ]
    assert said == []
    assert "aegis-ft" in (REPO / "README.md").read_text()
    assert "aegis-ft" in (REPO / "docs" / "kubernetes.md").read_text()


@pytest.mark.parametrize("obj", EXAMPLE_JOBS, ids=lambda o: o["metadata"]["name"])
def test_every_example_job_makes_worker_pods_that_validate(obj: dict[str, Any]) -> None:
    view = JobView.from_obj({**obj, "metadata": {**obj["metadata"], "uid": "u1"}})
    assert template_problem(view) is None
    for rank in range(view.worker_num):
        assert all_errors(worker_pod(view, rank, (), PodSettings())) == []
    if view.run_policy.gang == "Volcano":
        assert all_errors(pod_group(view)) == []


def _dockerfile() -> tuple[str, dict[str, str], dict[str, str]]:
    """examples/Dockerfile: its text, its ARG defaults, and what it copies where."""
    text = IMAGE_DOCKERFILE.read_text()
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    copies = {dst: src for src, dst in re.findall(r"^COPY (\S+) (\S+)$", text, re.M)}
    return text, args, copies


def test_the_cpu_example_image_is_the_one_the_docs_build_and_has_its_script() -> None:
    text, args, copies = _dockerfile()
    (container,) = CPU_EXAMPLE["spec"]["template"]["spec"]["containers"]
    image = container["image"]
    build = f"docker build -t {image} -f examples/Dockerfile ."
    assert build in text and build in (REPO / "docs" / "kubernetes.md").read_text()
    docs = (REPO / "docs" / "kubernetes.md").read_text()
    assert f"docker build -t {args['AEGIS_IMAGE']} ." in docs
    # the script the command runs is the one the image holds, where the command looks for it
    interpreter, script = container["command"]
    assert interpreter == "python"
    assert copies[f"{container['workingDir']}/{script}"] == "examples/train_ddp.py"
    assert re.search(rf"^WORKDIR {re.escape(container['workingDir'])}$", text, re.M)
    # torch: the version the tests run, its CPU build; no GPU asked for on a kind cluster
    pinned = re.search(r"^torch==(\S+)$", (REPO / "requirements-dev.txt").read_text(), re.M)
    assert pinned is not None and args["TORCH_VERSION"] == pinned.group(1)
    assert "download.pytorch.org/whl/cpu" in text
    assert "gpu" not in json.dumps(container.get("resources", {})).lower()
    assert str(CPU_EXAMPLE["spec"].get("nprocPerNode", 1)) == "1"


def test_the_cpu_example_command_trains_with_gloo_as_its_pod_runs_it(tmp_path: Path) -> None:
    """The example container's command, in its working directory with its environment, and
    the rendezvous environment the agent gives rank 0 of a one-worker job (fewer and faster
    steps than the example's 60 of a second)."""
    _, _, copies = _dockerfile()
    (container,) = CPU_EXAMPLE["spec"]["template"]["spec"]["containers"]
    workdir = tmp_path / container["workingDir"].strip("/")
    workdir.mkdir(parents=True)
    for dst, src in copies.items():
        target = tmp_path / dst.strip("/")
        target.write_bytes((REPO / src).read_bytes())
    env = {**os.environ, **{e["name"]: e["value"] for e in container.get("env", [])}}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env.update(STEPS="2", STEP_S="0", RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), TORCHELASTIC_RESTART_COUNT="0")
    command = [sys.executable if c == "python" else c for c in container["command"]]
    done = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{shlex.join(command)}: {done.stdout}{done.stderr}"
    assert "rank 0 done" in done.stdout
