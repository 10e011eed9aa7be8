"""A credential's renewal, signed by the key it was issued for (no secret sent again).

The agent signs `renewal_text` (job, pod, incarnation, key and the time it signs at) with its
user NKey's seed; the credential service checks the signature with the public key bound to
that incarnation, and that the time is within RENEW_SKEW_S of its own clock (a copy kept by
someone cannot be replayed later). The seed never leaves the agent.
"""

from __future__ import annotations

import nkeys
from nats_jwt.nkeys_ext import keypair_from_pubkey

RENEW_SKEW_S = 60
_PURPOSE = "aegis-credential-renewal-v1"


def renewal_text(
    namespace: str, job: str, pod: str, incarnation: str, public_key: str, signed_at: int
) -> bytes:
    """What a renewal's signature covers."""
    fields = (_PURPOSE, namespace, job, pod, incarnation, public_key, str(int(signed_at)))
    return "\n".join(fields).encode("utf-8")


def sign(seed: bytes, text: bytes) -> bytes:
    """The Ed25519 signature of `text` by the user key of `seed`."""
    kp = nkeys.from_seed(bytearray(seed))
    try:
        return bytes(kp.sign(text))
    finally:
        kp.wipe()


def verify(public_key: str, text: bytes, signature: bytes) -> bool:
    """Whether `signature` is `public_key`'s over `text` (False for anything malformed)."""
    try:
        return bool(keypair_from_pubkey(public_key.encode("ascii")).verify(text, signature))
    except (nkeys.NkeysError, ValueError, TypeError):  # nacl's errors are ValueErrors too
        return False
