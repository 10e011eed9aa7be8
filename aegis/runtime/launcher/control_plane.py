"""A job's control plane: nats-server, the gRPC credential service, the controller's files.

`control_plane(cfg)` starts nats-server (operator mode, the job's account) and the credential
service, writes the controller's credentials and `ctl.json` into the state dir, and yields a
`ControlPlane` that says how to start the controller (`controller_argv`: its state dir is
handed to it, not named there) and what to tell the agents (`grpc_target`, `ca_pem`). `aegis
run` uses it on one machine and on node 0 of a job across hosts (then with TLS, listening on
every interface); a bench can run its own fleet against it. Incarnations the credential
service accepts are `expected[pod]`, each proven by `cfg.proves` (the launcher's secret for it:
docs/security.md), or by the job's bootstrap token without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from aegis.errors import AegisError
from aegis.protocol.environment import DEFAULT_HEARTBEAT_RATE
from aegis.protocol.job_settings import DEFAULT_HEARTBEAT_TIMEOUT_S, JobSettings
from aegis.runtime.controller.service import CA_FILE as CA_FILE
from aegis.runtime.controller.service import CONTROLLER_CREDS
from aegis.runtime.transport.auth import JobAccount, Operator, UserCredentials
from aegis.runtime.transport.grpc_credentials import (
    DEFAULT_TTL_S,
    CredentialServer,
    CredentialService,
    Proves,
    Throttle,
    tls_server_credentials,
)
from aegis.runtime.transport.nats_server import NatsServer
from aegis.runtime.transport.tls import JobTls

CTL_FILE = "ctl.json"  # what `aegis ctl --state-dir` reads


class LaunchError(AegisError):
    """The job cannot be launched as asked (state directory in use, finished, not a dir)."""


CONTROLLER_CREDS_FILE = CONTROLLER_CREDS  # the controller's NATS credentials (mode 0600)


def free_port() -> int:
    """A free TCP port (the base of the per-order rendezvous ports)."""
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def write_private_json(path: Path, obj: object) -> None:
    """Write `obj` as JSON to `path`, readable by this user only (0600 from the start)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)  # an existing file keeps its mode through O_TRUNC
        json.dump(obj, f)


@dataclass(frozen=True)
class ControlPlaneConfig:
    """What the control plane of one job needs to know."""

    job: str
    namespace: str
    workers: int
    max_retry: int
    state_dir: Path
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT_S
    heartbeat_rate: float = DEFAULT_HEARTBEAT_RATE
    metrics_port: int = 0
    bind_host: str = "127.0.0.1"  # where nats-server and the credential service listen
    # how agents reach them, and the training's rendezvous host (MASTER_ADDR)
    advertise_host: str = "127.0.0.1"
    tls: JobTls | None = None  # None: plain TCP (one machine, loopback only)
    throttle: Throttle | None = None  # the credential service's limits
    agent_nats_url: str = ""  # the NATS URL agents are told, if not the server's own (tests)
    credential_ttl: float = DEFAULT_TTL_S  # a worker JWT's lifetime (renewed at half of it)
    proves: Proves | None = None  # how an incarnation proves itself (None: the job's token)
    extra_controller_args: tuple[str, ...] = field(default=())

    @property
    def settings(self) -> JobSettings:
        """The job's settings, as its controller process is given them."""
        return JobSettings(
            self.job,
            self.namespace,
            self.workers,
            self.max_retry,
            self.heartbeat_timeout,
            self.heartbeat_rate,
        )


@dataclass
class ControlPlane:
    """A running control plane (see the module's docstring)."""

    cfg: ControlPlaneConfig
    account: JobAccount
    nats: NatsServer
    grpc_target: str  # host:port agents dial
    agent_nats_url: str  # what the credential service tells agents
    expected: dict[str, str]  # pod -> the incarnation the credential service accepts now
    port_base: int
    service: CredentialService  # to revoke an incarnation that ended

    @property
    def bootstrap_token(self) -> str:
        """The job's bootstrap token: a proof only for a control plane without `proves`."""
        return self.account.bootstrap_token

    @property
    def ca_pem(self) -> str:
        """The job's CA certificate agents trust ("" without TLS)."""
        tls = self.cfg.tls
        return "" if tls is None else tls.ca_pem.decode("ascii")

    def controller_argv(self) -> list[str]:
        """`python -m aegis.cli controller ...` for this job (it reads launcher events on
        stdin: aegis.protocol.launcher_events); its job's settings are `controller_env()`.
        Its state dir is not named: a command line is readable by every user of the machine;
        the launcher hands it over (handover.py), and the controller finds its credentials
        and CA in it."""
        cfg = self.cfg
        argv = [
            *(sys.executable, "-m", "aegis.cli", "controller", "--nats-url", self.nats.url),
            *("--port-base", str(self.port_base), "--rdzv-host", cfg.advertise_host),
            *("--metrics-port", str(cfg.metrics_port), "--events"),
            *cfg.extra_controller_args,
        ]
        if cfg.tls is not None:
            argv += ["--nats-tls"]  # its CA is the state dir's CA_FILE
        return argv

    def controller_env(self) -> dict[str, str]:
        """The controller process's environment beside `controller_argv`: the job's settings,
        whole (aegis.protocol.job_settings)."""
        return self.cfg.settings.to_env()


@contextlib.asynccontextmanager
async def control_plane(cfg: ControlPlaneConfig) -> AsyncIterator[ControlPlane]:
    """Start nats-server and the credential service for `cfg`'s job, write the controller's
    credentials and ctl.json; stop both on exit (the controller is the caller's)."""
    op = Operator()
    account = op.create_job_account(cfg.namespace, cfg.job)
    expected: dict[str, str] = {}
    tls = cfg.tls
    async with NatsServer(op, [account], host=cfg.bind_host, tls=tls) as nats:
        port = nats.port
        agent_url = cfg.agent_nats_url or f"{nats.scheme}://{cfg.advertise_host}:{port}"
        service = CredentialService(agent_url, throttle=cfg.throttle, ttl_s=cfg.credential_ttl)
        # one credential per incarnation the launcher started, for the proof made for it
        service.add_job(
            account, expects=lambda pod, inc: expected.get(pod) == inc, proves=cfg.proves
        )
        creds = None if tls is None else tls_server_credentials(tls.server)
        async with CredentialServer(service, cfg.bind_host, server_credentials=creds) as grpc:
            assert grpc.port is not None
            plane = ControlPlane(
                cfg,
                account,
                nats,
                f"{cfg.advertise_host}:{grpc.port}",
                agent_url,
                expected,
                free_port(),
                service,
            )
            try:
                _write_files(plane)
            except OSError as exc:  # a full disk: said now, before anything starts
                raise LaunchError(f"cannot use --state-dir {cfg.state_dir}: {exc}") from None
            yield plane


def _write_files(plane: ControlPlane) -> None:
    """The controller's credentials, the CA (with TLS) and ctl.json, in the state dir."""
    state_dir = plane.cfg.state_dir
    creds = plane.account.controller_credentials()
    write_private_json(
        state_dir / CONTROLLER_CREDS_FILE, {"jwt": creds.user_jwt, "seed": creds.seed.decode()}
    )
    if plane.cfg.tls is not None:
        (state_dir / CA_FILE).write_bytes(plane.cfg.tls.ca_pem)
    _write_ctl(plane, plane.account.ctl_credentials())


def _write_ctl(plane: ControlPlane, creds: UserCredentials) -> None:
    cfg = plane.cfg
    path = cfg.state_dir / CTL_FILE
    obj: dict[str, object] = {
        "natsUrl": plane.nats.url,
        "jwt": creds.user_jwt,
        "seed": creds.seed.decode(),
        "namespace": cfg.namespace,
        "job": cfg.job,
        "pods": [f"{cfg.job}-worker-{i}" for i in range(cfg.workers)],
    }
    if plane.ca_pem:
        obj["natsCa"] = plane.ca_pem
    write_private_json(path, obj)
    print(
        f"aegis: control this job with: aegis ctl --state-dir "
        f"{shlex.quote(str(cfg.state_dir))} status "
        f"(credentials in {path})",
        file=sys.stderr,
        flush=True,
    )
