"""What of a rank's stderr reaches the console: everything, except a peer's departure in 15 lines.

When one rank leaves (a crash, a slow node evicted at a checkpoint), every surviving rank's
collective fails with the same long gloo or NCCL traceback ("Connection closed by peer ...
This is typically caused by a remote worker crashing"): the consequence, repeated on every
rank, burying the line that says what happened. `StderrFilter` passes every line through,
but holds a traceback back until its exception line: a traceback that ends in a peer's
departure becomes that exception line and a note of how many lines were left out; any other
traceback is forwarded whole. The per-rank log files (`--log-dir`) always get every line.

It also keeps the rank's last exception line (`last_exception`), which the pod's Error report
names when the rank left no error file (no `@record` on its main).
"""

from __future__ import annotations

import re

TRACEBACK = "Traceback (most recent call last):"
# a collective that failed because another rank is gone (gloo's and NCCL's words)
PEER_GONE = re.compile(
    r"Connection (closed|reset) by peer|remote worker crash|Broken pipe|"
    r"NCCL communicator was aborted|DistNetworkError|Socket Timeout"
)
# what `setpriv` (aegis.runtime.lifetime.dies_with_parent) says when it cannot exec the
# command it was given: the command's own fault (exit 126 or 127), not the node's
EXEC_FAILED = re.compile(r"^setpriv: failed to execute (.+)$")
MAX_HELD = 400  # a traceback longer than this is forwarded as it comes
MAX_EXCEPTION = 300  # characters of an exception line kept


class StderrFilter:
    """Feed it a rank's stderr lines (without their prefix); it returns the lines to show."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._held: list[str] | None = None  # a traceback being held back
        self.last_exception = ""
        self.hidden = 0  # lines left out, in all
        self.exec_failed = ""  # setpriv's reason when the command could not be exec'd
        self._first = True

    def feed(self, line: str) -> list[str]:
        """The lines to forward now, given the next line of stderr."""
        line = unprefixed(line, self.prefix)
        if self._first:
            self._first = False
            failed = EXEC_FAILED.match(line)
            if failed is not None:
                self.exec_failed = failed.group(1)
        if self._held is None:
            if line.strip() == TRACEBACK:
                self._held = [line]
                return []
            return [line]
        self._held.append(line)
        if line[:1].isspace() or not line.strip() or line.strip() == TRACEBACK:
            if len(self._held) > MAX_HELD:
                return self.flush()
            return []
        return self._ended(line)

    def flush(self) -> list[str]:
        """Whatever is held back (the stream ended, or the traceback is too long to hold)."""
        held, self._held = self._held or [], None
        return held

    def _ended(self, exception: str) -> list[str]:
        held, self._held = self._held or [], None
        self.last_exception = " ".join(exception.split())[:MAX_EXCEPTION]
        if not PEER_GONE.search(exception):
            return held
        self.hidden += len(held) - 1
        return [
            f"{self.last_exception} (a peer rank left; {len(held) - 1} lines of traceback "
            "not shown, --log-dir keeps them)"
        ]


def unprefixed(line: str, prefix: str) -> str:
    """`line` without torch's own `[rank<N>]: ` in front (it prefixes what a rank prints once
    the process group is up; the agent prefixes every line already)."""
    if line.startswith(prefix):
        line = line[len(prefix) :]
        return line[1:] if line.startswith(" ") else line
    return line
