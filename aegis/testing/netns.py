"""Hosts on one machine: Linux network namespaces on one bridge, each with its own address.

`Hosts(n)` makes a bridge in the root namespace and n namespaces, each joined to it by a veth
pair (the host's end is `eth0` inside its namespace, with 10.77.0.(i+1)/24; the switch's end
stays in the root namespace, where tests cut, slow or capture it). Processes run in a host
with `ip netns exec`; `kill_host` kills every process in it, as a host that dies would; every
namespace, link and bridge goes at `close()`. Needs root and iproute2: `unavailable()` says
why a machine cannot make hosts, for a skip (`HostsUnavailable` is raised where a host cannot be
impaired). Aegis's tests of a job across hosts and bench/multihost_vs_torchrun.py run on it.

Link impairment (`impair`): `tc qdisc ... netem` where the kernel has it (sch_netem); else
the same delay and loss applied by `NetemQueue` (the kernel hands each packet leaving the
host to a userspace queue, iptables NFQUEUE, which drops or releases it after the delay):
real packets on the real link either way.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class HostsUnavailable(RuntimeError):
    """This machine cannot do what was asked of its namespaced hosts (the reason says why)."""


SUBNET = "10.77.0"
IP = shutil.which("ip") or "/usr/sbin/ip"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IP, *args], capture_output=True, text=True, check=check, timeout=30)


def unavailable() -> str | None:
    """Why this machine cannot make namespaced hosts (None: it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed (apt-get install -y iproute2)"
    name = f"aegis-probe-{secrets.token_hex(3)}"
    made = _ip("netns", "add", name, check=False)
    if made.returncode != 0:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    _ip("netns", "del", name, check=False)
    return None


def netem_available() -> bool:
    """Whether the kernel has the netem qdisc (`tc qdisc ... netem`)."""
    if shutil.which("tc") is None:
        return False
    probe = f"anp{secrets.token_hex(3)}"
    _ip("link", "add", probe, "type", "dummy", check=False)
    try:
        made = subprocess.run(
            ["tc", "qdisc", "add", "dev", probe, "root", "netem", "delay", "1ms"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return made.returncode == 0
    finally:
        _ip("link", "del", probe, check=False)


@dataclass(frozen=True)
class Host:
    """One namespaced host."""

    index: int
    ns: str  # its network namespace
    address: str  # its address on the bridge
    switch_port: str  # the veth end in the root namespace (cut/slow/capture it there)


class Hosts:
    """n hosts on one bridge (see the module's docstring)."""

    def __init__(self, count: int) -> None:
        tag = secrets.token_hex(3)
        self.bridge = f"abr{tag}"
        self.hosts: list[Host] = []
        self._procs: list[subprocess.Popen[str]] = []
        self._impaired: dict[int, Any] = {}  # host -> its NetemQueue (None: tc netem)
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("link", "set", self.bridge, "up")
            for i in range(count):
                self.hosts.append(self._make(i, tag))
        except BaseException:
            self.close()
            raise

    def _make(self, i: int, tag: str) -> Host:
        host = Host(i, f"aegis-{tag}-h{i}", f"{SUBNET}.{i + 1}", f"av{tag}{i}")
        _ip("netns", "add", host.ns)
        inner = f"ai{tag}{i}"
        _ip("link", "add", host.switch_port, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", host.ns)
        _ip("-n", host.ns, "link", "set", inner, "name", "eth0")
        _ip("-n", host.ns, "addr", "add", f"{host.address}/24", "dev", "eth0")
        _ip("-n", host.ns, "link", "set", "eth0", "up")
        _ip("-n", host.ns, "link", "set", "lo", "up")
        _ip("link", "set", host.switch_port, "master", self.bridge)
        _ip("link", "set", host.switch_port, "up")
        return host

    def __getitem__(self, i: int) -> Host:
        return self.hosts[i]

    def popen(
        self,
        i: int,
        argv: Sequence[str],
        *,
        env: dict[str, str],
        out: Path,
        cwd: Path | None = None,
    ) -> subprocess.Popen[str]:
        """Run `argv` in host i, stdout and stderr to `out` (its own session)."""
        with out.open("w") as f:
            proc = subprocess.Popen(
                [IP, "netns", "exec", self.hosts[i].ns, *argv],
                env=env,
                stdout=f,
                stderr=subprocess.STDOUT,
                text=True,
                cwd=cwd,
                start_new_session=True,
            )
        self._procs.append(proc)
        return proc

    def pids(self, i: int) -> list[int]:
        """Every process in host i (but the link impairment's own reader)."""
        listed = _ip("netns", "pids", self.hosts[i].ns, check=False).stdout.split()
        ours = {q.proc.pid for q in self._impaired.values() if q is not None}
        return [int(p) for p in listed if p.isdigit() and int(p) not in ours]

    def kill_host(self, i: int) -> None:
        """Kill every process in host i at once (SIGKILL), as a host that dies; returns
        when none is left."""
        for _ in range(50):
            pids = self.pids(i)
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        raise AssertionError(f"processes left in host {i} after SIGKILL: {self.pids(i)}")

    def wait_empty(self, timeout: float) -> None:
        """Wait until no host has a process left (AssertionError naming what is left)."""
        deadline = time.monotonic() + timeout
        while any(self.pids(h.index) for h in self.hosts):
            if time.monotonic() > deadline:
                left = "; ".join(f"h{h.index}: {_describe(self.pids(h.index))}" for h in self.hosts)
                raise AssertionError(f"processes left in hosts after {timeout}s: {left}")
            time.sleep(0.05)

    def leftovers(self) -> dict[int, str]:
        """The processes still in each host (host -> their command lines), if any."""
        return {h.index: _describe(p) for h in self.hosts if (p := self.pids(h.index))}

    def link(self, i: int, up: bool) -> None:
        """Plug or unplug host i's cable (its switch port goes down: no carrier)."""
        _ip("link", "set", self.hosts[i].switch_port, "up" if up else "down")

    def impair(self, i: int, delay_ms: int, loss_pct: float) -> str:
        """Delay and drop packets leaving host i; how ("tc netem" or "nfqueue")."""
        host = self.hosts[i]
        if netem_available():
            subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    host.ns,
                    "tc",
                    "qdisc",
                    "add",
                    "dev",
                    "eth0",
                    "root",
                    "netem",
                    "delay",
                    f"{delay_ms}ms",
                    "loss",
                    f"{loss_pct}%",
                ],
                check=True,
                capture_output=True,
                timeout=30,
            )
            self._impaired[i] = None
            return "tc netem"
        if shutil.which("iptables") is None:
            raise HostsUnavailable("no sch_netem in this kernel and no iptables for its NFQUEUE")
        from .nfqueue import NetemQueue

        queue = NetemQueue(host.ns, delay_ms / 1000, loss_pct / 100)
        self._impaired[i] = queue
        return "nfqueue"

    def capture(self, i: int, path: Path) -> subprocess.Popen[str]:
        """tshark on host i's switch port, writing every packet to `path` (stop it with
        `stop_capture`)."""
        proc = subprocess.Popen(
            ["tshark", "-q", "-i", self.hosts[i].switch_port, "-w", str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self._procs.append(proc)
        # tshark says "Capturing on ..." once it listens (after a warning or two)
        assert proc.stderr is not None
        said = []
        for _ in range(10):
            said.append(proc.stderr.readline())
            if "Capturing on" in said[-1]:
                return proc
        raise AssertionError(f"tshark did not start: {''.join(said)}")

    def close(self) -> None:
        """Kill whatever still runs in the hosts, then remove them and the bridge."""
        for queue in self._impaired.values():
            if queue is not None:
                queue.close()
        for host in self.hosts:
            with contextlib.suppress(Exception):
                self.kill_host(host.index)
        for proc in self._procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                proc.wait(10)
        for host in self.hosts:
            _ip("link", "del", host.switch_port, check=False)
            _ip("netns", "del", host.ns, check=False)
        _ip("link", "del", self.bridge, check=False)


def stop_capture(proc: subprocess.Popen[str]) -> None:
    """End a capture cleanly (SIGINT: tshark writes out what it holds)."""
    proc.send_signal(signal.SIGINT)
    proc.wait(30)


def _describe(pids: list[int]) -> str:
    out = []
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
        except OSError:
            cmd = "?"
        out.append(f"{pid} {cmd}")
    return ", ".join(out) or "none"
