"""The Aegis Controller's credential service in a process of its own (its own interpreter lock).

The controller process runs every job's runner (a thread each); a credential service in it
would take the same interpreter lock for each request (gRPC, the JWT's signature, the pod
check's API calls), so a large job's agents getting their credentials would hold up that very
job's runner handling their ACKs. In a child process the two run on two cores
(docs/scale.md, "Decisions": Kubernetes credentials in a child process).

The parent (`CredentialProcess`) starts `python -m aegis.k8s.credential_process` so that it
dies with the parent (`dies_with_parent`), and speaks JSON lines on its stdin/stdout:

    parent: {"account_jwt", "account_seed", "nats_url", "host", "port", "api": {...},
             "pods": {"cache": bool, "namespace": str | None}}
    child:  {"ready": "host:port"} | {"error": "why"}
    parent: {"op": "add", "namespace", "job", "token_sha256"} | {"op": "remove", ...}
    child:  {"ok": true} | {"error": "why"}

(the account's seed goes on stdin, never in argv or the environment). End of stdin ends the
child. A child that died (or does not answer within CALL_TIMEOUT_S) is started again with
every job the parent registered, by the next call or the controller's next turn
(`ensure_running`, every 0.2 s); the bindings of incarnations to keys start afresh then, as
after a restart of the whole controller.

The child keeps a cache of the worker pods (one list, then a watch: aegis/k8s/informer.py,
in `pods.namespace`, None: every namespace) and accepts a pod the watch shows alive with the
agent's incarnation without asking the API (aegis/k8s/pod_identity.py); any other request is
checked with a GET, as without the cache. An agent proves its pod with the pod's projected
service-account token, checked with a TokenReview (aegis/k8s/token_review.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from aegis import retry
from aegis.k8s.api import KubeApi
from aegis.k8s.errors import K8sError
from aegis.k8s.informer import start_pod_informer
from aegis.k8s.keys import job_account, load_account
from aegis.k8s.pod_cache import PodCache
from aegis.k8s.pod_identity import pod_expected
from aegis.k8s.token_review import token_proves
from aegis.retry import Backoff
from aegis.runtime.lifetime import dies_with_parent
from aegis.runtime.transport.auth import Account

log = logging.getLogger(__name__)

START_TIMEOUT_S = 60.0  # imports (grpc, kubernetes) and the bind, on a busy node
CALL_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ApiSource:
    """How the child reaches the Kubernetes API: a plain-HTTP URL (tests, `kubectl proxy`),
    else a kubeconfig (None: in-cluster) and its context."""

    url: str = ""
    kubeconfig: str | None = None
    context: str | None = None

    def connect(self) -> KubeApi:
        """A client for the API."""
        if self.url:
            return KubeApi.for_url(self.url)
        return KubeApi.from_config(self.kubeconfig, self.context)


class CredentialProcess:
    """The credential service of the Aegis Controller, run in a child process: `register` a
    job (its credentials issued from then on, for the pods the API has) and `revoke` it."""

    def __init__(
        self,
        account: Account,
        nats_url: str,
        source: ApiSource,
        host: str,
        port: int,
        *,
        namespace: str | None = None,
        cache_pods: bool = True,
    ) -> None:
        self._config = {
            "account_jwt": account.jwt,
            "account_seed": bytes(account.keypair.seed).decode("ascii"),
            "nats_url": nats_url,
            "host": host,
            "port": port,
            "api": {"url": source.url, "kubeconfig": source.kubeconfig, "context": source.context},
            "pods": {"cache": cache_pods, "namespace": namespace},
        }
        self._jobs: dict[tuple[str, str], str] = {}  # registered: (namespace, job) -> token hash
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._unread = b""  # the child's output read past its last whole line
        self._serving = False  # the child answered ready and has every job
        self.address = ""
        self.starts = 0  # how many children were started (restarts: starts - 1)
        self._retry_at = 0.0  # ensure_running: after a failed start, not before this
        self._backoff = Backoff(retry.CREDENTIAL_PROCESS)  # between failed starts

    def start(self) -> None:
        """Start the child and wait until it serves (K8sError if it cannot)."""
        with self._lock:
            try:
                self._start()
            except OSError as exc:
                self._kill()
                raise K8sError(f"the credential process cannot be started: {exc}") from None

    def register(self, namespace: str, job: str, token_sha256: str) -> None:
        """Issue credentials for `job` from now on (before its runner starts)."""
        with self._lock:
            self._jobs[(namespace, job)] = token_sha256
            self._call({"op": "add", "namespace": namespace, "job": job,
                        "token_sha256": token_sha256})  # fmt: skip

    def revoke(self, namespace: str, job: str) -> None:
        """Issue no more credentials for `job` (an Issue then gets PERMISSION_DENIED)."""
        with self._lock:
            self._jobs.pop((namespace, job), None)
            self._call({"op": "remove", "namespace": namespace, "job": job})

    def ensure_running(self) -> None:
        """Start the child again (with every registered job) if it died; after a start that
        failed, not again before a pause of `aegis.retry.CREDENTIAL_PROCESS` (1 s, doubling up
        to 30 s: each start costs a second of CPU)."""
        with self._lock:
            if self.running or time.monotonic() < self._retry_at:
                return
            try:
                self._restart("is not running")
            except K8sError:
                self._retry_at = time.monotonic() + self._backoff.next()
                raise
            self._backoff.reset()

    def stop(self, timeout: float = 5.0) -> int | None:
        """End the child: its stdin closes, it stops serving and exits (killed if it does not
        within `timeout`). Its exit status (0: it stopped by itself; None: none was running)."""
        with self._lock:
            proc, self._proc, self._serving = self._proc, None, False
        if proc is None:
            return None
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()

    @property
    def running(self) -> bool:
        """Whether the child serves (started, every job registered, not dead since)."""
        return self._serving and self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The child's pid (None when it is not running)."""
        return None if self._proc is None else self._proc.pid

    # ---------------- internals (under the lock) ----------------

    def _start(self) -> None:
        self._serving = False
        argv = dies_with_parent([sys.executable, "-m", "aegis.k8s.credential_process"])
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self._proc, self._unread = proc, b""
        self.starts += 1
        try:
            answer = self._exchange(self._config, START_TIMEOUT_S)
        except _ChildGone as exc:
            answer = {"error": str(exc)}
        if "ready" not in answer:
            self._kill()
            raise K8sError(f"the credential process did not start: {answer.get('error', answer)}")
        self.address = str(answer["ready"])
        for (namespace, job), token_hash in self._jobs.items():
            self._checked({"op": "add", "namespace": namespace, "job": job,
                           "token_sha256": token_hash})  # fmt: skip
        self._serving = True

    def _call(self, request: dict[str, Any]) -> None:
        try:
            self._checked(request)
        except _ChildGone as exc:
            # its jobs (this one included, or not for a revoke) are registered again
            self._restart(str(exc))

    def _restart(self, why: str) -> None:
        log.warning("credential process %s; starting it again", why)
        self._kill()
        try:
            self._start()
        except (_ChildGone, OSError) as exc:  # K8sError (it said why) goes up as it is
            self._kill()
            raise K8sError(f"the credential process cannot be started again: {exc}") from None

    def _checked(self, request: dict[str, Any]) -> None:
        answer = self._exchange(request, CALL_TIMEOUT_S)
        if answer.get("ok") is not True:
            raise K8sError(f"the credential process refused {request['op']}: {answer}")

    def _exchange(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one line, read one line (_ChildGone when the child is gone or silent)."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise _ChildGone("is not running")
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        except OSError as exc:
            raise _ChildGone(f"is gone ({exc})") from None
        line = self._read_line(proc, timeout)
        if line is None:
            raise _ChildGone(f"did not answer within {timeout:g} s")
        try:
            answer = json.loads(line)
        except ValueError:
            raise _ChildGone(f"answered {line[:200]!r}") from None
        if not isinstance(answer, dict):
            raise _ChildGone(f"answered {line[:200]!r}")
        return answer

    def _read_line(self, proc: subprocess.Popen[str], timeout: float) -> str | None:
        """The child's next line, or None when no whole line came within `timeout` seconds
        (a child that wrote half a line and stalled does not hold the caller up);
        _ChildGone at the end of its output. Reads the pipe's descriptor, never its buffered
        reader, so that `select` sees everything not yet read."""
        assert proc.stdout is not None
        fd, deadline = proc.stdout.fileno(), time.monotonic() + timeout
        while b"\n" not in self._unread:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise _ChildGone(f"closed its output (exit {proc.poll()})")
            self._unread += chunk
        line, _, self._unread = self._unread.partition(b"\n")
        return line.decode("utf-8", "replace")

    def _kill(self) -> None:
        self._serving = False
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()


class _ChildGone(Exception):
    """The child died, closed its stdout, or did not answer in time."""


# ---------------- the child ----------------


async def _serve_child() -> int:
    """The child's body: serve credentials, apply the parent's registrations, end with stdin."""
    from aegis.runtime.transport.grpc_credentials import CredentialServer, CredentialService

    loop = asyncio.get_running_loop()
    read = sys.stdin.readline
    try:
        config = json.loads(await loop.run_in_executor(None, read))
        account = load_account(config["account_jwt"], config["account_seed"].encode("ascii"))
        api = ApiSource(**config["api"]).connect()
        pods = PodCache() if config["pods"]["cache"] else None
        service = CredentialService(config["nats_url"])
        server = CredentialServer(service, config["host"], int(config["port"]))
        await server.start()
    except Exception as exc:  # everything the parent sent or we could not do: say why
        _answer({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    _answer({"ready": server.address})
    stop_informer = threading.Event()
    if pods is not None:
        start_pod_informer(api, pods, config["pods"]["namespace"], stop_informer)
    try:
        while line := await loop.run_in_executor(None, read):
            try:
                request = json.loads(line)
                key = (request["namespace"], request["job"])
                if request["op"] == "add":
                    job = job_account(account, *key, request["token_sha256"])
                    # an agent proves its pod with the pod's own token (TokenReview), and the
                    # pod must be the job's with that uid: API calls, in the service's
                    # threads, not its loop
                    service.add_job(
                        job,
                        pod_expected(api, *key, pods),
                        expects_blocks=True,
                        proves=token_proves(api, key[0]),
                    )
                elif request["op"] == "remove":
                    service.remove_job(*key)
                else:
                    raise ValueError(f"unknown op {request['op']!r}")
            except (ValueError, KeyError, TypeError, K8sError) as exc:
                _answer({"error": f"{type(exc).__name__}: {exc}"})
                continue
            _answer({"ok": True})
    finally:
        stop_informer.set()
        await server.stop()
        api.close()  # ends the informer's watch
    return 0


def _answer(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> int:
    """`python -m aegis.k8s.credential_process` (started by CredentialProcess)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    return asyncio.run(_serve_child())


if __name__ == "__main__":
    raise SystemExit(main())
