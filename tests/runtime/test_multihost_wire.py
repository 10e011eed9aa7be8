"""What another host sees on the wire of a job across hosts: tshark on host 1's switch port
for a whole job (3 namespaced hosts). No JWT, NKey seed, bootstrap token, join secret or join
token crosses in clear; no NATS protocol or Aegis message either; every connection to node 0's
rendezvous, nats-server and credential service opens with a TLS handshake. Gloo's own traffic
(the training's collectives) is torch's and not encrypted: the training tensor is seen there,
and only there (docs/multihost.md, "What crosses the wire").
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from aegis.protocol.rendezvous import join_token

from ..support.multihost import RDZV_PORT, agent_pids, start_job
from ..support.netns import Hosts, hosts3, stop_capture  # noqa: F401 - the fixture
from ..support.wait import wait_for

SCRIPT = Path(__file__).parent / "scripts" / "broadcast_marker.py"
MARKER = struct.pack("<f", 1234.5678) * 8  # 32 bytes of the broadcast tensor
# secrets and plaintext protocol, by shape: a JWT (header.payload), an NKey seed, NATS verbs,
# an Aegis message's keys
SHAPES = {
    "JWT": re.compile(rb"eyJ[A-Za-z0-9_-]{10,}\.eyJ"),
    "NKey seed": re.compile(rb"S[UAO][A-Z2-7]{56}"),
    "NATS CONNECT": re.compile(rb"CONNECT \{"),
    "NATS INFO": re.compile(rb"INFO \{"),
    "NATS PUB/MSG": re.compile(rb"(PUB|MSG|HPUB|HMSG) aegis\."),
    "Aegis message": re.compile(rb'"AegisNamespace"'),
}


def _payloads(capture: Path) -> list[tuple[int, int, bytes]]:
    """(source port, destination port, TCP payload) of every captured segment with data."""
    out = subprocess.run(
        [
            "tshark",
            "-r",
            str(capture),
            "-Y",
            "tcp.len > 0",
            "-T",
            "fields",
            "-e",
            "tcp.srcport",
            "-e",
            "tcp.dstport",
            "-e",
            "tcp.payload",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    rows = []
    for line in out.splitlines():
        src, dst, payload = line.split("\t")
        rows.append((int(src), int(dst), bytes.fromhex(payload.replace(":", ""))))
    return rows


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


@pytest.mark.slow  # a whole three-host job more; the CI keeps the healthy job and a crash
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_nothing_secret_crosses_the_wire(hosts3: Hosts, tmp_path: Path) -> None:  # noqa: F811
    capture = tmp_path / "host1.pcapng"
    tshark = hosts3.capture(1, capture)
    job = start_job(hosts3, tmp_path, "3", cmd=[sys.executable, str(SCRIPT)])
    agent = wait_for(lambda: agent_pids(hosts3, 1), 120, "host 1's agent")[0]
    env = _environ(agent)  # what node 0 told host 1's agent (root reads it; the wire must not)
    grpc = env["AEGIS_GRPC"]
    # its incarnation's secret came over the rendezvous link (TLS) and was handed to it on a
    # socket: it is in no environment (docs/security.md)
    assert "AEGIS_BOOTSTRAP_TOKEN" not in env and "AEGIS_SECRET_FD" in env
    codes = [n.finish(240.0) for n in job.nodes]
    stop_capture(tshark)
    assert codes == [0, 0, 0], job.outputs()
    assert "[rank1]:rank 1 got the marker" in job.nodes[1].output
    nats_port = int(json.loads((job.state / "ctl.json").read_text())["natsUrl"].rsplit(":", 1)[1])
    aegis_ports = {RDZV_PORT, nats_port, int(grpc.rsplit(":", 1)[1])}
    secrets_ = {
        "join secret": job.secret.encode(),
        "join token": join_token(job.secret.encode()).encode(),
    }
    rows = _payloads(capture)
    assert rows, "nothing captured"
    seen: dict[str, int] = {}
    tensor_ports: set[int] = set()
    for src, dst, data in rows:
        for what, value in secrets_.items():
            if value in data:
                seen[what] = seen.get(what, 0) + 1
        for what, shape in SHAPES.items():
            if shape.search(data):
                seen[what] = seen.get(what, 0) + 1
        if MARKER in data:
            tensor_ports |= {src, dst}
    assert seen == {}, f"in clear on the wire: {seen}"
    # every connection host 1 opened to node 0's services starts with a TLS ClientHello
    opened = {dst: data for src, dst, data in reversed(rows) if dst in aegis_ports}
    assert set(opened) == aegis_ports, f"no traffic seen to {aegis_ports - set(opened)}"
    firsts = _first_client_payloads(rows, aegis_ports)
    assert firsts and all(p[:2] == b"\x16\x03" for p in firsts), [p[:8] for p in firsts]
    # the positive control: the capture does see a tensor in clear, on gloo's connections only
    assert tensor_ports, "the broadcast tensor was not seen at all: is the capture blind?"
    assert not tensor_ports & aegis_ports, tensor_ports
    hosts3.wait_empty(10.0)


def _first_client_payloads(
    rows: list[tuple[int, int, bytes]], server_ports: set[int]
) -> list[bytes]:
    """The first payload of each client connection (by its source port) to `server_ports`."""
    first: dict[tuple[int, int], bytes] = {}
    for src, dst, data in rows:
        if dst in server_ports:
            first.setdefault((src, dst), data)
    return list(first.values())
