"""The one-time secret of each incarnation a local launcher starts.

The launcher makes a fresh secret for every agent process it starts, has it handed over on
an inherited socket (aegis.runtime.handover, by `spawn_agent`) and keeps only its SHA-256
here; the credential service asks `proves(pod, incarnation, proof)`. A secret proves exactly
one incarnation of one pod, and is forgotten when that incarnation ends: a secret read by
someone else (it cannot be read from /proc) would buy nothing beyond it, and the job-wide
bootstrap token that every agent's environment showed is gone.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class IncarnationProofs:
    """(pod, incarnation) -> the SHA-256 of its secret, while it runs."""

    def __init__(self) -> None:
        self._digests: dict[tuple[str, str], str] = {}

    def new(self, pod: str, incarnation: str) -> str:
        """A fresh secret for `incarnation` of `pod`, to hand over to its agent (the
        launcher's `spawn_agent`, on the node the agent runs on)."""
        secret = secrets.token_urlsafe(32)
        self._digests[(pod, incarnation)] = _digest(secret)
        return secret

    def forget(self, pod: str, incarnation: str) -> None:
        """The incarnation ended: its secret proves nothing any more."""
        self._digests.pop((pod, incarnation), None)

    def proves(self, pod: str, incarnation: str, proof: str) -> bool:
        """Whether `proof` is the secret of `incarnation` of `pod` (constant time)."""
        want = self._digests.get((pod, incarnation))
        return want is not None and hmac.compare_digest(_digest(proof), want)
