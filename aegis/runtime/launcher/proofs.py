"""The one-time secret of each incarnation a local launcher starts.

The launcher makes a fresh secret for every agent process it starts, hands it over on an
inherited socket (aegis.runtime.handover) and keeps only its SHA-256 here; the credential
service asks `proves(pod, incarnation, proof)`. A secret proves exactly one incarnation of one
pod, and is forgotten when that incarnation ends: a secret read by someone else (it cannot be
read from /proc) would buy nothing beyond it, and the job-wide bootstrap token that every
agent's environment showed is gone.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from aegis.runtime.handover import Handover, hand_over


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class IncarnationProofs:
    """(pod, incarnation) -> the SHA-256 of its secret, while it runs."""

    def __init__(self) -> None:
        self._digests: dict[tuple[str, str], str] = {}

    def new(self, pod: str, incarnation: str) -> Handover:
        """A fresh secret for `incarnation` of `pod`, ready to hand over to its agent."""
        secret = secrets.token_urlsafe(32)
        self._digests[(pod, incarnation)] = _digest(secret)
        return hand_over(secret)

    def forget(self, pod: str, incarnation: str) -> None:
        """The incarnation ended: its secret proves nothing any more."""
        self._digests.pop((pod, incarnation), None)

    def proves(self, pod: str, incarnation: str, proof: str) -> bool:
        """Whether `proof` is the secret of `incarnation` of `pod` (constant time)."""
        want = self._digests.get((pod, incarnation))
        return want is not None and hmac.compare_digest(_digest(proof), want)
