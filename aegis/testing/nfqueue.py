"""netem's delay and loss where the kernel has no sch_netem: an iptables NFQUEUE in a host.

`NetemQueue(ns, delay_s, loss)` sends every packet host `ns` sends out of eth0 to a netlink
queue (iptables' NFQUEUE target, with --queue-bypass: packets flow if the queue's reader is
gone) and starts a reader in that namespace (`python -m aegis.testing.nfqueue`) that drops
each packet with probability `loss` and releases the others `delay_s` after they were queued,
in order: what `tc qdisc add dev eth0 root netem delay D loss L` does to the host's egress.
The reader speaks nfnetlink_queue itself (linux/netfilter/nfnetlink_queue.h), metadata only.
"""

from __future__ import annotations

import argparse
import heapq
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN = 1, 2, 3
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NF_DROP, NF_ACCEPT = 0, 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
SO_RCVBUFFORCE = 33
QUEUE = 7


def _attr(kind: int, payload: bytes) -> bytes:
    size = 4 + len(payload)
    return struct.pack("=HH", size, kind) + payload + b"\0" * ((4 - size % 4) % 4)


def _message(msg_type: int, flags: int, seq: int, queue: int, attrs: bytes) -> bytes:
    body = struct.pack("!BBH", socket.AF_UNSPEC, 0, queue) + attrs
    return (
        struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg_type, flags, seq, 0)
        + body
    )


def _attrs(data: bytes) -> dict[int, bytes]:
    out, pos = {}, 0
    while pos + 4 <= len(data):
        size, kind = struct.unpack_from("=HH", data, pos)
        if size < 4:
            break
        out[kind & 0x7FFF] = data[pos + 4 : pos + size]
        pos += (size + 3) & ~3
    return out


def serve(queue: int, delay_s: float, loss: float, ready: Path) -> None:
    """Bind `queue` and judge its packets until SIGTERM."""
    sock = _bound(queue)
    ready.write_text("ready")
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    rng = random.Random()
    waiting: list[tuple[float, int]] = []  # (release time, packet id)
    while not stop:
        now = time.monotonic()
        while waiting and waiting[0][0] <= now:
            _, pid = heapq.heappop(waiting)
            _verdict(sock, queue, pid, NF_ACCEPT)
        timeout = waiting[0][0] - now if waiting else 0.5
        try:
            readable, _, _ = select.select([sock], [], [], max(0.0, timeout))
        except InterruptedError:
            continue
        if not readable:
            continue
        for pid in _packet_ids(sock.recv(1 << 16)):
            if rng.random() < loss:
                _verdict(sock, queue, pid, NF_DROP)
            else:
                heapq.heappush(waiting, (time.monotonic() + delay_s, pid))
    for _, pid in waiting:
        _verdict(sock, queue, pid, NF_ACCEPT)


def _bound(queue: int) -> socket.socket:
    """A netlink socket bound to `queue`, copying only the packets' metadata."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    sock.bind((0, 0))
    cmd = _attr(NFQA_CFG_CMD, struct.pack("!BBH", NFQNL_CFG_CMD_BIND, 0, 0))
    params = _attr(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META) + b"\0\0\0")
    maxlen = _attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", 100_000))
    for seq, attrs in enumerate((cmd, params, maxlen), 1):
        sock.send(_message(NFQNL_MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK, seq, queue, attrs))
        answer = sock.recv(4096)
        kind = struct.unpack_from("=H", answer, 4)[0]
        if kind == NLMSG_ERROR and struct.unpack_from("=i", answer, 16)[0] != 0:
            raise OSError(f"nfqueue config {seq} refused: {struct.unpack_from('=i', answer, 16)}")
    return sock


def _packet_ids(data: bytes) -> Iterator[int]:
    """The ids of the queued packets in one netlink read."""
    pos = 0
    while pos + 16 <= len(data):
        size, kind = struct.unpack_from("=IH", data, pos)
        if kind & 0xFF == NFQNL_MSG_PACKET and kind >> 8 == NFNL_SUBSYS_QUEUE:
            hdr = _attrs(data[pos + 20 : pos + size]).get(NFQA_PACKET_HDR)
            if hdr is not None:
                yield struct.unpack_from("!I", hdr)[0]
        pos += (size + 3) & ~3


def _verdict(sock: socket.socket, queue: int, pid: int, verdict: int) -> None:
    attrs = _attr(NFQA_VERDICT_HDR, struct.pack("!II", verdict, pid))
    sock.send(_message(NFQNL_MSG_VERDICT, NLM_F_REQUEST, 0, queue, attrs))


class NetemQueue:
    """Delay and loss on everything host `ns` sends out of eth0 (see the module's docstring)."""

    def __init__(self, ns: str, delay_s: float, loss: float) -> None:
        self.ns = ns
        ready = Path(f"/tmp/aegis-nfqueue-{ns}.ready")
        ready.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                ns,
                sys.executable,
                "-m",
                "aegis.testing.nfqueue",
                "--queue",
                str(QUEUE),
                "--delay",
                str(delay_s),
                "--loss",
                str(loss),
                "--ready",
                str(ready),
            ],
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the nfqueue reader did not start ({self.proc.poll()})")
            time.sleep(0.05)
        ready.unlink()
        self._rule("-I")

    def _rule(self, action: str) -> None:
        subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                self.ns,
                "iptables",
                action,
                "OUTPUT",
                "-o",
                "eth0",
                "-j",
                "NFQUEUE",
                "--queue-num",
                str(QUEUE),
                "--queue-bypass",
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )

    def close(self) -> None:
        """Remove the rule, stop the reader (what it held is released)."""
        subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                self.ns,
                "iptables",
                "-D",
                "OUTPUT",
                "-o",
                "eth0",
                "-j",
                "NFQUEUE",
                "--queue-num",
                str(QUEUE),
                "--queue-bypass",
            ],
            capture_output=True,
            timeout=30,
        )
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queue", type=int, default=QUEUE)
    parser.add_argument("--delay", type=float, required=True)
    parser.add_argument("--loss", type=float, required=True)
    parser.add_argument("--ready", type=Path, required=True)
    args = parser.parse_args()
    serve(args.queue, args.delay, args.loss, args.ready)


if __name__ == "__main__":
    main()
