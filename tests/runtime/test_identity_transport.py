"""A credential speaks for one incarnation, expires, is renewed by its key and revoked on the
server when its incarnation is replaced; the secret that proves an incarnation is handed over
on an inherited socket nobody else can open (issue 42). Real nats-server, real gRPC."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time

import pytest

from aegis.runtime.errors import BusError, NatsServerError
from aegis.runtime.handover import HandoverError, hand_over, take_handed
from aegis.runtime.log_limit import LimitedLog
from aegis.runtime.transport.auth import Operator, UserCredentials, new_user_keypair
from aegis.runtime.transport.bus import Bus, SenderBudget
from aegis.runtime.transport.grpc_credentials import (
    CredentialServer,
    CredentialService,
    renew_credentials,
    request_credentials,
)
from aegis.runtime.transport.nats_server import NatsServer, can_connect
from aegis.runtime.transport.tls import JobTls

from ..support import Launch, wait_for_async

POD = "train-w-worker-0"


def test_a_handed_secret_is_read_once_and_its_socket_cannot_be_opened_by_others() -> None:
    handed = hand_over("s3cret")
    try:
        # what another process of the same user would try: /proc/<pid>/fd/N of a socket
        with pytest.raises(OSError) as err:
            open(f"/proc/{os.getpid()}/fd/{handed.fd}", "rb").close()
        assert err.value.errno == 6  # ENXIO: no such device or address
        code = "import os; from aegis.runtime.handover import take_handed as t; e = dict("
        code += "os.environ); print(t(e), t(e), os.environ.get('AEGIS_SECRET_FD') in e)"
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, **handed.env},
            pass_fds=(handed.fd,),
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        handed.close()
    # read once, then the variable is gone: the second call finds nothing
    assert out.stdout.split() == ["s3cret", "None", "False"]


def test_an_empty_or_missing_handover_is_an_error_not_a_credential() -> None:
    import socket

    ours, theirs = socket.socketpair()
    ours.close()  # nothing written: someone else read it first, or nothing was sent
    with pytest.raises(HandoverError, match="no secret"):
        take_handed({"AEGIS_SECRET_FD": str(theirs.detach())})
    with pytest.raises(HandoverError, match="descriptor number"):
        take_handed({"AEGIS_SECRET_FD": "x"})
    assert take_handed({}) is None


async def test_a_credential_renewed_in_time_keeps_its_connection_one_not_renewed_is_closed() -> (
    None
):
    op = Operator()
    job = op.create_job_account("team", "train-w")
    async with NatsServer(op, [job]) as nats:
        service = CredentialService(nats.url, ttl_s=3)
        service.add_job(job, expects=lambda pod, inc: inc in ("i1", "i2"))
        async with CredentialServer(service) as grpc_server:
            kept = await request_credentials(
                grpc_server.address, namespace="team", job="train-w", pod_name=POD,
                proof=job.bootstrap_token, incarnation="i1", attempts=1,
            )  # fmt: skip
            let_go = await request_credentials(
                grpc_server.address, namespace="team", job="train-w", pod_name=POD,
                proof=job.bootstrap_token, incarnation="i2", attempts=1,
            )  # fmt: skip
            buses = [await Bus.connect(i.nats_url, i.credentials) for i in (kept, let_go)]
            try:
                for _ in range(3):  # renewed every second: well past the first JWT's expiry
                    await asyncio.sleep(1)
                    kept = await renew_credentials(grpc_server.address, kept, attempts=1)
                    await buses[0].use_credentials(kept.credentials)
                await wait_for_async(lambda: buses[1].closed.is_set(), 10, "the expiry")
                assert not buses[0].closed.is_set()
                await wait_for_async(lambda: buses[0].connected, 5, "the renewed one back")
                assert time.time() >= let_go.expires_at  # closed by the server, at expiry
                await buses[0].flush()
            finally:
                for bus in buses:
                    await bus.close()


async def test_a_revoked_credential_is_cut_off_and_refused_the_others_go_on() -> None:
    op = Operator()
    job = op.create_job_account("team", "train-r")
    async with NatsServer(op, [job]) as nats:
        gone = job.account.new_user("w0", job.worker_permissions(POD, "i1"))
        kept = job.account.new_user("w1", job.worker_permissions(POD, "i2"))
        buses = [await Bus.connect(nats.url, c) for c in (gone, kept)]
        try:
            await nats.revoke("team", "train-r", [gone.public_key])
            await wait_for_async(lambda: buses[0].closed.is_set(), 5, "the revoked one closed")
            assert not await can_connect(nats.url, gone)
            assert buses[1].connected and await can_connect(nats.url, kept)
            with pytest.raises(BusError):
                await buses[0].flush()
        finally:
            for bus in buses:
                await bus.close()


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
async def test_a_revocation_returns_once_the_server_applies_it(
    tls: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`revoke` confirms with a probe revoked alongside; over TLS the probe must trust the
    job's CA, else every probe fails and a revocation the server never applied passed for
    done (a job across hosts started a pod's replacement while its old credential still
    worked, or during the reload)."""
    op = Operator()
    job = op.create_job_account("team", "train-t")
    job_tls = JobTls.generate(["127.0.0.1"]) if tls else None
    ca = job_tls.ca_pem if job_tls is not None else None
    async with NatsServer(op, [job], tls=job_tls) as nats:
        gone = job.account.new_user("w0", job.worker_permissions(POD, "i1"))
        await nats.revoke("team", "train-t", [gone.public_key])
        assert not await can_connect(nats.url, gone, ca_pem=ca)  # applied when it returned
        other = job.account.new_user("w1", job.worker_permissions(POD, "i2"))

        async def never_reloaded() -> None:  # a server that does not apply it
            return None

        monkeypatch.setattr(nats, "_reload", never_reloaded)
        with pytest.raises(NatsServerError, match="reload did not take effect"):
            await nats.revoke("team", "train-t", [other.public_key], timeout=1.0)
        assert await can_connect(nats.url, other, ca_pem=ca)


def test_a_sender_over_its_budget_is_shed_others_are_not(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    budget = SenderBudget(rate=10, burst=5, max_senders=2)
    assert [budget.admit("a") for _ in range(7)] == [True] * 5 + [False] * 2
    assert budget.admit("b")  # another sender has its own
    now[0] += 0.15  # one token back for each 1/rate s
    assert budget.admit("a") and not budget.admit("a")
    budget.admit("c")  # a third sender: the longest idle ("b") is forgotten
    assert list(budget._senders) == ["a", "c"]


def test_warnings_of_one_key_are_logged_once_a_period(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    limited = LimitedLog(logging.getLogger("t"), period=60, max_keys=10, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="t"):
        logged = [limited.warning(("p", "kind"), "bad %d", i) for i in range(1000)]
        limited.warning(("q", "kind"), "other")
        now[0] = 61.0
        limited.warning(("p", "kind"), "bad again")
    assert logged.count(True) == 1 and limited.left_out == 999
    assert [r.getMessage() for r in caplog.records] == [
        "bad 0",
        "other",
        "bad again (999 more like it in the last 61 s not logged)",
    ]


def test_a_stolen_public_key_cannot_be_renewed_without_its_seed() -> None:
    """The renewal's signature is the proof: a JWT (public) with another key's seed signs
    nothing the service accepts (test_grpc_credentials checks the service's refusals)."""
    from aegis.runtime.transport import renewal

    kp, thief = new_user_keypair(), new_user_keypair()
    text = renewal.renewal_text("team", "train-w", POD, "i1", kp.public_key.decode(), 1)
    assert renewal.verify(kp.public_key.decode(), text, renewal.sign(bytes(kp.seed), text))
    assert not renewal.verify(kp.public_key.decode(), text, renewal.sign(bytes(thief.seed), text))
    assert UserCredentials("jwt", bytes(kp.seed)).public_key == kp.public_key.decode()


def test_agents_renew_their_credentials_through_a_job_longer_than_their_lifetime(
    aegis_run: Launch,
) -> None:
    """Credentials of 4 s, a command of 12 s: every agent renews at half the lifetime and
    reconnects; nothing is lost, no pod is restarted."""
    sleep = [sys.executable, "-c", "import time; time.sleep(12); print('slept', flush=True)"]
    r = aegis_run(2, "--credential-ttl", "4", cmd=sleep, env={"AEGIS_LOG": "INFO"})
    assert r.finish(240) == 0, r.output[-3000:]
    status = r.status()
    assert (status["phase"], status["recoverCount"]) == ("Succeed", 0)
    renewed = r.stderr.count("credentials renewed for")
    assert renewed >= 2 * 2, renewed  # each agent at least twice within the command's 12 s
