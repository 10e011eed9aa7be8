"""When each joined agent was last heard from (monotonic, in memory, never persisted).

Every message of an agent's current incarnation counts (ControllerCore); an agent silent for
longer than the job's silence timeout is a candidate for a lost pod. A restarted controller,
or one whose bus was out, gives every known agent a full timeout again (`refresh_all`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable


class Liveness:
    """The last time each joined agent was heard (`last_seen`: pod -> monotonic seconds)."""

    def __init__(self, pods: Iterable[str], timeout: float) -> None:
        now = time.monotonic()
        self.last_seen: dict[str, float] = dict.fromkeys(pods, now)
        self.timeout = timeout  # <= 0: nobody is ever silent

    def refresh_all(self, now: float | None = None) -> None:
        """Count every joined agent as seen at `now` (default: now; later for a grace)."""
        now = time.monotonic() if now is None else now
        for pod in self.last_seen:
            self.last_seen[pod] = now

    def silent(self, now: float | None = None) -> list[str]:
        """The joined agents silent for longer than the timeout."""
        if self.timeout <= 0:
            return []
        now = time.monotonic() if now is None else now
        return [pod for pod, seen in self.last_seen.items() if now - seen > self.timeout]
