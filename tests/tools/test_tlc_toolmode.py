"""Tool-mode framing and interpretation on verbatim output of TLC 2.15 (2020-01-30)."""

from __future__ import annotations

from tools.tlc.cfg import parse_cfg
from tools.tlc.interpret import ResultBuilder
from tools.tlc.result import Progress, TlcResult
from tools.tlc.toolmode import Message, ToolModeReader, describe_exit


def S(code: int, sev: int = 0) -> str:
    return f"@!@!@STARTMSG {code}:{sev} @!@!@"


def E(code: int) -> str:
    return f"@!@!@ENDMSG {code} @!@!@"


NESTED_CFG_ERROR = f"""{S(1000, 1)}
TLC threw an unexpected exception.
The exception was a tlc2.tool.ConfigFileException
: {S(5006)}
TLC found an error in the configuration file at line 4
It was expecting = or <-, but did not find it.
{E(5006)}
{E(1000)}
{S(2186)}
Finished in 279ms at (2026-11-29 19:58:36)
{E(2186)}
"""

INITIAL_VIOLATION = f"""{S(2107, 1)}
Invariant Small is violated by the initial state:
/\\ s = <<"a\\\\b">>
/\\ x = 0

{E(2107)}
"""

PROGRESS_LINE = (
    "Progress(3) at 2026-11-29 19:58:07: 4 states generated (401 s/min), "
    "3 distinct states found (301 ds/min), 0 states left on queue."
)

STUTTERING = f"""{S(2190)}
Finished computing initial states: 1 distinct state generated at 2026-11-29 19:58:06.
{E(2190)}
{S(2116, 1)}
Temporal properties were violated.

{E(2116)}
{S(2264, 1)}
The following behavior constitutes a counter-example:

{E(2264)}
{S(2217, 4)}
1: <Initial predicate>
x = 0

{E(2217)}
{S(2217, 4)}
2: <Next line 5, col 9 to line 5, col 24 of module Live>
x = 1

{E(2217)}
{S(2218, 4)}
3: Stuttering
{E(2218)}
{S(2200)}
{PROGRESS_LINE}
{E(2200)}
{S(2199)}
1,234 states generated, 3 distinct states found, 0 states left on queue.
{E(2199)}
"""

ASSERT_FAILED = f"""{S(1000, 1)}
TLC threw an unexpected exception.
The exception was a tlc2.tool.EvalException
: {S(2132)}
The first argument of Assert evaluated to FALSE; the second argument was:
"x too big"
{E(2132)}
{E(1000)}
{S(2103, 1)}
The error occurred when TLC was evaluating the nested
expressions at the following positions:
0. Line 5, column 9 to line 7, column 37 in Ev
{E(2103)}
"""


def frame(text: str) -> tuple[list[Message], ToolModeReader]:
    reader = ToolModeReader()
    out = [m for line in text.splitlines(keepends=True) for m in reader.feed(line)]
    return out + reader.close(), reader


def interpret(text: str, exit_code: int, cfg: str = "") -> tuple[TlcResult, list[Progress]]:
    seen: list[Progress] = []
    builder = ResultBuilder(parse_cfg(cfg), seen.append)
    for msg in frame(text)[0]:
        builder.add(msg)
    return builder.finish(exit_code, 1.0), seen


def test_nested_message_starting_mid_line() -> None:
    msgs, reader = frame("Parsing file /tmp/X.tla\n" + NESTED_CFG_ERROR)
    assert [m.code for m in msgs] == [1000, 2186]
    (child,) = msgs[0].children
    assert child.code == 5006
    assert child.text.startswith("TLC found an error in the configuration file at line 4")
    assert reader.plain_lines == ["Parsing file /tmp/X.tla"]


def test_unterminated_message_is_flushed() -> None:
    msgs, _ = frame(f"{S(2200)}\nProgress(1) at x: 1 states generated")
    assert [m.code for m in msgs] == [2200]


def test_invariant_violated_by_initial_state() -> None:
    result, _ = interpret(INITIAL_VIOLATION, 12, "INVARIANT Small")
    v = result.violation
    assert v is not None and (v.kind, v.name) == ("invariant", "Small")
    assert [s.action for s in v.trace] == ["Initial predicate"]
    assert v.trace[0].state == {"s": ("a\\b",), "x": 0}
    assert not result.ok


def test_liveness_with_stuttering_and_progress() -> None:
    result, seen = interpret(STUTTERING, 13, "SPECIFICATION Spec\nPROPERTY Stut")
    v = result.violation
    assert v is not None and (v.kind, v.name, v.loop) == ("property", "Stut", 2)
    assert [(s.action, s.state) for s in v.trace] == [
        ("Initial predicate", {"x": 0}),
        ("Next", {"x": 1}),
    ]
    assert v.trace[1].location == "line 5, col 9 to line 5, col 24 of module Live"
    assert (result.states_generated, result.distinct_states, result.depth) == (1234, 3, 3)
    assert seen == [Progress(states_generated=4, distinct_states=3, queue=0, depth=3)]


def test_evaluation_error_becomes_an_error_violation() -> None:
    result, _ = interpret(ASSERT_FAILED, 75)
    v = result.violation
    assert v is not None and v.kind == "error"
    assert v.name is not None and v.name.startswith("The first argument of Assert")
    assert '"x too big"' in v.name
    assert len(result.errors) == 2 and not result.ok


def test_exit_status_names() -> None:
    assert describe_exit(12) == "violation safety"
    assert describe_exit(150) == "error spec parse"
    assert describe_exit(3) == "exit status 3"


# TLC 2.15 on `CONSTANT C = {1, "a"}` (a set it cannot sort): a message with code -1
UNSORTABLE_CFG_SET = f"""{S(2185)}
Starting... (2026-12-06 05:27:29)
{E(2185)}
{S(-1, 1)}
Wrong invocation of TLC error printer. Error code not found.
{E(-1)}
{S(2186)}
Finished in 2779ms at (2026-12-06 05:27:29)
{E(2186)}
"""


def test_a_message_with_a_negative_code_is_read_as_an_error() -> None:
    msgs, reader = frame(UNSORTABLE_CFG_SET)
    assert [m.code for m in msgs] == [2185, -1, 2186]
    assert not any("STARTMSG" in line for line in reader.plain_lines)
    result, _ = interpret(UNSORTABLE_CFG_SET, 255)
    assert result.errors == ["Wrong invocation of TLC error printer. Error code not found."]
    assert not result.ok
