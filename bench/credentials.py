"""Credential issuance on Kubernetes: N agents at once, each pod checked against the API.

    python bench/credentials.py [--agents 2000] [--latency-ms 0 5 20] [--json]

On Kubernetes the credential service accepts a request only with the pod's own
service-account token, reviewed by the API server (`aegis.k8s.token_review`: one TokenReview
per request), and for a pod the API has, with that uid and the job's label
(`aegis.k8s.pod_identity.pod_expected`: one GET per request). The API here is an HTTP server
answering each TokenReview and GET after `--latency-ms` (an API server's round trip: a
quorum read from etcd is milliseconds on a real cluster, more when it is busy; a fake, since no
API server can run on these machines), in a process of its own; N agents ask at once from
another process (real gRPC, each its own NKey), and the bench waits for every credential. This
process holds what the Aegis Controller process holds; its CPU time per credential is printed
beside the wall time (the lock the controller's job runners share).

Four ways side by side, in one run:

  loop      the service on a thread and event loop of this process, the check on that loop
            (the Aegis Controller before: each GET held up every other request, so N checks
            ran one after the other, and every request took this process's interpreter lock)
  threads   the same, the check in the service's threads (CHECK_THREADS at once)
  process   the service in a process of its own, checks in its threads (`CredentialProcess`
            without its pod cache: a GET per request)
  cached    the same with its pod cache (the Aegis Controller now): one list and a watch of
            the pods, which exist before the agents ask (as a pod exists before its agent
            runs); a pod the watch shows is accepted without a GET

It prints, per latency, each way's seconds for all N, credentials a second, this process's CPU
per credential, the GETs the fake API answered, and each way's time over the loop's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import sys
import time
import uuid
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp import web  # noqa: E402

from aegis.k8s.aegis_controller import ServerThread  # noqa: E402
from aegis.k8s.api import KubeApi  # noqa: E402
from aegis.k8s.credential_process import ApiSource, CredentialProcess  # noqa: E402
from aegis.k8s.keys import token_sha256  # noqa: E402
from aegis.k8s.pod_identity import pod_expected  # noqa: E402
from aegis.k8s.resources import LABEL_JOB  # noqa: E402
from aegis.k8s.token_review import POD_NAME_KEY, POD_UID_KEY, token_proves  # noqa: E402
from aegis.runtime.transport.auth import JobAccount, Operator  # noqa: E402
from aegis.runtime.transport.grpc_credentials import (  # noqa: E402
    CredentialServer,
    CredentialService,
    Throttle,
    request_credentials,
)
from bench.procstat import raise_nofile  # noqa: E402

NAMESPACE, JOB = "team", "creds"
NATS_URL = "nats://127.0.0.1:4222"  # named in each credential; nothing connects to it
WAYS = ("loop", "threads", "process", "cached")


def _pod(name: str, uid: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": NAMESPACE, "uid": uid, "labels": {LABEL_JOB: JOB}}
    return {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "status": {"phase": "Running"}}


def _serve_pods(uids: dict[str, str], latency_s: float, conn: Connection, watching: Any) -> None:
    """The fake API's process: GET /api/v1/namespaces/NS/pods/NAME after `latency_s`, a list
    of every pod (one page) after it, and a watch that sends nothing (`watching` is set when
    one begins: the list came first); sends its URL, then the number of GETs it answered
    when told to stop."""

    async def serve() -> None:
        gets = 0
        stopping = asyncio.Event()  # ends the watches: the server's cleanup waits for them

        async def review(request: web.Request) -> web.Response:
            """A TokenReview: the bench's tokens are `sa.<pod>.<uid>`, bound to that pod."""
            await asyncio.sleep(latency_s)
            spec = (await request.json()).get("spec") or {}
            parts = str(spec.get("token", "")).split(".", 2)
            pod_name, uid = (parts[1], parts[2]) if len(parts) == 3 else ("", "")
            status: dict[str, Any] = {"authenticated": False}
            if uids.get(pod_name) == uid:
                extra = {POD_NAME_KEY: [pod_name], POD_UID_KEY: [uid]}
                user = {"username": f"system:serviceaccount:{NAMESPACE}:default", "extra": extra}
                status = {"authenticated": True, "user": user, "audiences": spec["audiences"]}
            return web.json_response({"kind": "TokenReview", "status": status}, status=201)

        async def pod(request: web.Request) -> web.Response:
            nonlocal gets
            gets += 1
            await asyncio.sleep(latency_s)
            name = request.match_info["name"]
            if request.match_info["ns"] != NAMESPACE or name not in uids:
                return web.json_response({"kind": "Status", "code": 404}, status=404)
            return web.json_response(_pod(name, uids[name]))

        async def pods(request: web.Request) -> web.StreamResponse:
            if request.query.get("watch") != "true":
                await asyncio.sleep(latency_s)
                items = (
                    [_pod(n, u) for n, u in uids.items()]
                    if request.match_info.get("ns", NAMESPACE) == NAMESPACE
                    else []
                )
                return web.json_response(
                    {"kind": "PodList", "metadata": {"resourceVersion": "1"}, "items": items}
                )
            stream = web.StreamResponse()
            await stream.prepare(request)
            watching.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    stopping.wait(), float(request.query.get("timeoutSeconds", "300"))
                )
            return stream

        app = web.Application()
        app.router.add_post("/apis/authentication.k8s.io/v1/tokenreviews", review)
        app.router.add_get("/api/v1/namespaces/{ns}/pods/{name}", pod)
        app.router.add_get("/api/v1/namespaces/{ns}/pods", pods)
        app.router.add_get("/api/v1/pods", pods)  # every namespace's
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        conn.send(f"http://127.0.0.1:{port}")
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # "stop"
        stopping.set()
        conn.send(gets)
        await runner.cleanup()

    asyncio.run(serve())


def _ask_all(address: str, uids: dict[str, str], conn: Connection) -> None:
    """The agents' process: every pod of `uids` asks at once, with its own service-account
    token; sends the seconds until all got their credential."""

    async def ask() -> float:
        started = time.perf_counter()
        await asyncio.gather(
            *(
                request_credentials(
                    address, namespace=NAMESPACE, job=JOB, pod_name=pod, proof=f"sa.{pod}.{uid}",
                    incarnation=uid, attempts=1, timeout=600.0,
                )
                for pod, uid in uids.items()
            )
        )  # fmt: skip
        return time.perf_counter() - started

    conn.send(asyncio.run(ask()))


def _receive(conn: Connection, proc: Any, timeout_s: float, what: str) -> Any:
    """What the child `proc` sends on `conn`; RuntimeError if it ends first or takes longer
    than `timeout_s` (a bench that waits for a dead child would never end)."""
    deadline = time.monotonic() + timeout_s
    while not conn.poll(0.2):
        if not proc.is_alive():
            raise RuntimeError(f"{what}: its process ended first (exit {proc.exitcode})")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: nothing within {timeout_s:g} s")
    return conn.recv()


def measure(agents: int, latency_s: float, way: str, timeout_s: float = 600.0) -> dict[str, Any]:
    """One way: a fresh service and API, `agents` requests at once. The agents and the API
    run in processes of their own: this one holds only what the Aegis Controller holds."""
    ctx = multiprocessing.get_context("spawn")
    account = Operator().create_job_account(NAMESPACE, JOB)
    uids = {f"{JOB}-worker-{i}": str(uuid.uuid4()) for i in range(agents)}
    api_end, api_child = ctx.Pipe()
    watching = ctx.Event()
    api_args = (uids, latency_s, api_child, watching)
    api_proc = ctx.Process(target=_serve_pods, args=api_args, daemon=True)
    api_proc.start()
    try:
        url = _receive(api_end, api_proc, 60, "the fake API's URL")
        server = _server(way, account, url)
        cpu = time.process_time()
        try:
            if way == "cached" and not watching.wait(60):  # (an idle wait: no CPU)
                raise RuntimeError("the credential process never watched the pods")
            end, child = ctx.Pipe()
            args = (server.address, uids, child)
            agents_proc = ctx.Process(target=_ask_all, args=args, daemon=True)
            agents_proc.start()
            try:
                seconds = _receive(end, agents_proc, timeout_s, "every credential")
            finally:
                agents_proc.join(5)
                if agents_proc.is_alive():
                    agents_proc.kill()
        finally:
            cpu = time.process_time() - cpu
            server.stop()
        api_end.send("stop")
        gets = _receive(api_end, api_proc, 30, "the fake API's count")
    finally:
        api_proc.join(30)
        if api_proc.is_alive():
            api_proc.kill()
            api_proc.join()
    if api_proc.exitcode != 0:
        raise RuntimeError(f"the fake API did not end by itself (exit {api_proc.exitcode})")
    assert gets == (0 if way == "cached" else agents), (way, gets, agents)
    return {
        "s": round(seconds, 3),
        "per_s": round(agents / seconds, 1),
        "controller_cpu_ms_per_credential": round(1000 * cpu / agents, 3),
        "pod_gets": gets,
    }


class _ThreadServer:
    """The service on a thread and event loop of its own in this process (as the Aegis
    Controller ran it before it had a process of its own)."""

    def __init__(self, account: JobAccount, url: str, blocks: bool) -> None:
        self.api = KubeApi.for_url(url)
        service = CredentialService(NATS_URL, throttle=Throttle(rate=1e9, burst=1e9))
        service.add_job(
            account,
            pod_expected(self.api, NAMESPACE, JOB),
            expects_blocks=blocks,
            proves=token_proves(self.api, NAMESPACE),
        )
        self.grpc = CredentialServer(service, "127.0.0.1", 0)
        self.thread = ServerThread("grpc-credentials", self.grpc.start, self.grpc.stop)
        self.thread.start()
        self.address = self.grpc.address

    def stop(self) -> None:
        self.thread.stop()
        self.api.close()


def _server(way: str, account: JobAccount, url: str) -> Any:
    """The credential server of `way`, serving `account`'s job (its pods checked on the API
    at `url`)."""
    if way in ("process", "cached"):
        source = ApiSource(url=url)
        cached = way == "cached"
        process = CredentialProcess(
            account.account, NATS_URL, source, "127.0.0.1", 0, cache_pods=cached
        )
        process.start()
        # the bench's job account holds the token; the process is told its hash, as the CR says
        process.register(NAMESPACE, JOB, token_sha256(account.bootstrap_token))
        return process
    return _ThreadServer(account, url, blocks=way == "threads")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", type=int, default=2000)
    p.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 5.0, 20.0])
    p.add_argument("--json", action="store_true", help="print only the JSON object")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds one way may take")
    args = p.parse_args(argv)
    if args.agents < 1 or any(ms < 0 for ms in args.latency_ms) or args.timeout <= 0:
        p.error("--agents must be >= 1, --latency-ms >= 0 and --timeout > 0")
    raise_nofile()  # inherited by the agents' process: N agents hold N connections at once
    out: dict[str, Any] = {"agents": args.agents, "by_latency_ms": {}}
    for ms in args.latency_ms:
        ways = {way: measure(args.agents, ms / 1000, way, args.timeout) for way in WAYS}
        loop = ways["loop"]["s"]
        for way in WAYS[1:]:
            ways[f"{way}_over_loop"] = round(ways[way]["s"] / loop, 3)
        ways["cached_over_process"] = round(ways["cached"]["s"] / ways["process"]["s"], 3)
        out["by_latency_ms"][f"{ms:g}"] = ways
        if not args.json:
            line = ", ".join(f"{way} {ways[way]['s']} s" for way in WAYS)
            print(f"latency {ms:g} ms: {line}", flush=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
