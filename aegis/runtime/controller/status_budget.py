"""How much of a job's status its free text and history may take (the Aegis CR's limit).

A status file has no size limit, but an Aegis CR does (etcd keeps objects of at most its
`--max-request-bytes`): there the failure reasons (a pod's last one, an error node's) and the
history, which a running job gains, are kept within a budget that the Kubernetes side works
out from the job's size (aegis/k8s/status_size.py), so that an admitted job's status fits
whatever faults it meets. A reason is measured as the API server stores it: JSON as Go's
encoding/json writes it (UTF-8; `<`, `>`, `&`, U+2028 and U+2029 as `\\u` escapes).
"""

from __future__ import annotations

from dataclasses import dataclass

from aegis.protocol.payloads import MAX_REASON
from aegis.runtime.controller.store import HISTORY_LIMIT

ELLIPSIS = "…"  # ends a clipped reason


@dataclass(frozen=True)
class StatusBudget:
    """`reason_bytes`: the most a reason may take as a JSON string (quotes included; None:
    no byte limit, MAX_REASON characters); `history`: the history entries kept."""

    reason_bytes: int | None = None
    history: int = HISTORY_LIMIT

    def reason(self, text: str) -> str:
        """`text` as the status keeps it: its first MAX_REASON characters, clipped to
        `reason_bytes` (ending in an ellipsis then)."""
        text = text[:MAX_REASON]
        return text if self.reason_bytes is None else clip_to_bytes(text, self.reason_bytes)


def _char_bytes(c: str) -> int:
    """What one character takes in a JSON string as Go's encoding/json writes it."""
    o = ord(c)
    if c in '"\\':
        return 2
    if o < 0x20:
        return 2 if c in "\n\r\t" else 6
    if c in "<>&" or o in (0x2028, 0x2029):
        return 6
    if o < 0x80:
        return 1
    if o < 0x800:
        return 2
    return 3 if o < 0x10000 else 4


def stored_json_bytes(text: str) -> int:
    """The bytes of `text` as a JSON string in the API server's store, quotes included."""
    if text.isascii() and text.isprintable() and not any(c in text for c in '"\\<>&'):
        return len(text) + 2
    return 2 + sum(_char_bytes(c) for c in text)


def clip_to_bytes(text: str, limit: int) -> str:
    """`text` if it takes at most `limit` bytes as a stored JSON string, else its longest
    prefix that does with an ellipsis after it ("" if not even the ellipsis fits)."""
    if stored_json_bytes(text) <= limit:
        return text
    room = limit - 2 - _char_bytes(ELLIPSIS)
    if room < 0:
        return ""
    keep = used = 0
    while used + _char_bytes(text[keep]) <= room:  # stops inside: the whole text does not fit
        used += _char_bytes(text[keep])
        keep += 1
    return text[:keep] + ELLIPSIS
