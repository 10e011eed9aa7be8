"""Copies of one request, handled once (pure bookkeeping, no I/O).

An agent sends a report again, with the same bytes and the same reply subject, while no
receipt came (`Bus.request_patiently`: after 2, 2, 3, 4.5 ... s). Under a backlog every report
waits longer than that: at 12,500 simulated agents 25,000 reports brought 12,000-30,000
copies, each decoded, handled and answered again by the controller at the very time it was
behind. A copy is the same request, so the subscriber handles the first one only:

- a copy that comes while the first is being handled is dropped: the first one's reply goes
  to the same reply subject;
- a copy that comes after it was answered gets the same reply bytes again (the first reply
  may have been lost), from the last `keep` replies; an older one is handled afresh, as
  every copy was before;
- when the first one got no reply (a malformed message, a rolled-back commit: the sender is
  to try again), the next copy is handled afresh.

A copy is recognised by the subject it came in on (the sender's own), its reply subject and
a digest of its bytes: a different message that reuses a reply subject, or the same bytes
from another sender, is not taken for a copy.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from enum import Enum

KEEP_REPLIES = 32_768  # ~12 MB of replies: a 12,500-pod job's reports of two rounds

Key = tuple[str, str, bytes]


class Copy(Enum):
    """What to do with a request whose earlier copy is being handled or unknown."""

    NEW = "new"  # handle it
    RUNNING = "running"  # drop it: the copy being handled will answer


class RequestCopies:
    """The requests being handled and the last `keep` replies, by copy key."""

    def __init__(
        self, keep: int = KEEP_REPLIES, on_copy: Callable[[str], None] | None = None
    ) -> None:
        """`on_copy(outcome)` is told each copy not handled: "dropped" or "answered"."""
        if keep < 0:
            raise ValueError("keep must be >= 0")
        self.keep = keep
        self.on_copy = on_copy
        self.dropped = 0  # copies that came while their first was handled
        self.answered = 0  # copies answered again with their first one's reply
        self._running: set[Key] = set()
        self._answered: OrderedDict[Key, bytes] = OrderedDict()

    @staticmethod
    def key(subject: str, reply: str, payload: bytes) -> Key:
        """What identifies the copies of one request: the subject it came in on (its
        sender's, when only that credential may publish there), its reply subject and bytes."""
        return subject, reply, hashlib.blake2b(payload, digest_size=16).digest()

    def arrived(self, key: Key) -> Copy | bytes:
        """A request came: NEW (it is now running: call `ended` when it is done), RUNNING
        (drop it), or the reply bytes of a copy answered before (send them again)."""
        reply = self._answered.get(key)
        if reply is not None:
            self.answered += 1
            self._told("answered")
            return reply
        if key in self._running:
            self.dropped += 1
            self._told("dropped")
            return Copy.RUNNING
        self._running.add(key)
        return Copy.NEW

    def ended(self, key: Key, reply: bytes | None) -> None:
        """The running request `key` was answered with `reply` (None: not answered; the next
        copy is handled afresh)."""
        self._running.discard(key)
        if reply is None:
            return
        self._answered[key] = reply
        while len(self._answered) > self.keep:
            self._answered.popitem(last=False)

    def _told(self, outcome: str) -> None:
        if self.on_copy is not None:
            self.on_copy(outcome)

    @property
    def running(self) -> int:
        """Requests being handled now."""
        return len(self._running)
