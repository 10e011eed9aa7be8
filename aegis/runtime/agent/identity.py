"""The agent's identity: the proof it starts with, its credential, and keeping it valid.

The proof of the agent's incarnation is, in order: the secret its launcher handed it on an
inherited socket (local mode, aegis.runtime.handover), the pod's projected service-account
token (`AEGIS_TOKEN_FILE`, Kubernetes), or the job's bootstrap token (`AEGIS_BOOTSTRAP_TOKEN`,
a launcher of neither kind). It is spent on one credential request; the credential (a JWT
for this incarnation only, that expires) is then renewed by requests signed with its own key
at half its lifetime, and the bus reconnects with the fresh JWT. A renewal refused (the
incarnation was replaced, its credential revoked) or a connection the server closed (the
JWT expired or was revoked) ends the agent: the launcher or Kubernetes replaces it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, MutableMapping
from pathlib import Path

from aegis.errors import AegisError
from aegis.protocol.environment import Var
from aegis.runtime.errors import CredentialsRejected, TransportError
from aegis.runtime.handover import take_handed
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.grpc_credentials import IssuedCredentials, renew_credentials

log = logging.getLogger(__name__)
RENEW_RETRY_S = 2.0  # between tries of a renewal that failed for want of an answer
MAX_TOKEN_BYTES = 8192


class ProofError(AegisError):
    """The agent's proof of identity cannot be read."""


def agent_proof(env: MutableMapping[str, str]) -> str:
    """The proof this agent presents (see the module's docstring), taken out of `env`: the
    handed secret's descriptor and the bootstrap token are removed from it (a child never
    sees them); '' when there is none."""
    handed = take_handed(env)
    token = env.pop(Var.BOOTSTRAP_TOKEN, "")
    if handed is not None:
        return handed
    path = env.get(Var.TOKEN_FILE, "")
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")[:MAX_TOKEN_BYTES].strip()
        except OSError as exc:
            why = f"{Var.TOKEN_FILE} {path}: cannot read the pod's token: {exc}"
            raise ProofError(why) from None
        if not text:
            raise ProofError(f"{Var.TOKEN_FILE} {path} is empty")
        return text
    return token


async def keep_renewed(
    target: str,
    issued: IssuedCredentials,
    bus: Bus,
    on_lost: Callable[[str], None],
    clock: Callable[[], float] = time.time,
    ca_pem: bytes | None = None,
) -> None:
    """Renew `issued` at half its lifetime, for as long as the agent runs (over TLS trusting
    `ca_pem` when given), and reconnect `bus` with each fresh JWT; `on_lost(why)` once the
    credential cannot be kept (a refused renewal, or the server closed the connection)."""
    closed = asyncio.create_task(bus.closed.wait())
    try:
        while True:
            wait = max(0.0, issued.renew_at(clock()) - clock())
            if wait == float("inf"):
                await closed
                on_lost("the server closed this agent's connection")
                return
            done, _ = await asyncio.wait({closed}, timeout=wait)
            if done:
                on_lost("the server closed this agent's connection (credential expired or revoked)")
                return
            renewed = await _renew(target, issued, on_lost, clock, ca_pem)
            if renewed is None:
                return
            issued = renewed
            try:
                await bus.use_credentials(issued.credentials)
            except TransportError as exc:
                log.warning("agent %s: %s", issued.pod, exc)
    finally:
        closed.cancel()


async def _renew(
    target: str,
    issued: IssuedCredentials,
    on_lost: Callable[[str], None],
    clock: Callable[[], float],
    ca_pem: bytes | None,
) -> IssuedCredentials | None:
    """The renewed credential; None (after `on_lost`) when it was refused. A renewal that
    gets no answer is tried again until the JWT has expired (the server then closes the
    connection, and the caller sees it)."""
    while True:
        try:
            return await renew_credentials(target, issued, attempts=3, timeout=5.0, ca_pem=ca_pem)
        except CredentialsRejected as exc:
            on_lost(f"its credential was not renewed: {exc}")
            return None
        except TransportError as exc:
            left = issued.expires_at - clock()
            log.warning("agent %s: renewal failed (%s); %.0f s left", issued.pod, exc, left)
            if left <= 0:
                on_lost(f"its credential expired: {exc}")
                return None
            await asyncio.sleep(min(RENEW_RETRY_S, max(left / 4, 0.1)))
