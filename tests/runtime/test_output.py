"""A rank's stderr on the console: a peer's departure in one line, anything else whole."""

from __future__ import annotations

from aegis.runtime.agent.output import StderrFilter

GLOO = (
    "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
    "Connection closed by peer [127.0.0.1]:14745. This is typically caused by a remote worker "
    "crashing."
)
TRACE = [
    "Traceback (most recent call last):",
    '  File "/tmp/gl.py", line 10, in <module>',
    "    dist.all_reduce(t)",
    '  File ".../distributed_c10d.py", line 3252, in all_reduce',
    "    work.wait()",
]


def feed(lines: list[str], prefix: str = "[rank0]:") -> tuple[StderrFilter, list[str]]:
    filt = StderrFilter(prefix)
    out = [kept for line in lines for kept in filt.feed(line)]
    return filt, out + filt.flush()


def test_a_peers_departure_is_one_line() -> None:
    filt, out = feed(["[rank0]: " + line for line in [*TRACE, GLOO]])  # torch's own prefix
    assert out == [
        f"{GLOO} (a peer rank left; 5 lines of traceback not shown, --log-dir keeps them)"
    ]
    assert filt.last_exception == GLOO and filt.hidden == 5


def test_any_other_traceback_is_forwarded_whole() -> None:
    lines = [*TRACE, "FileNotFoundError: [Errno 2] No such file or directory: 'data.bin'"]
    filt, out = feed(["before", *lines, "after"])
    assert out == ["before", *lines, "after"]
    assert filt.last_exception.startswith("FileNotFoundError: [Errno 2]")


def test_chained_tracebacks_and_a_cut_stream() -> None:
    chained = [*TRACE, "KeyError: 'x'", "", "During handling of the above exception:", "", *TRACE]
    _, out = feed(chained)  # the stream ends inside the second traceback: all of it is shown
    assert out == chained
    _, out = feed(["no traceback", "  indented", "Error: plain"])
    assert out == ["no traceback", "  indented", "Error: plain"]


def test_a_traceback_too_long_to_hold_is_forwarded_as_it_comes() -> None:
    deep = [
        "Traceback (most recent call last):",
        *(f'  File "f{i}.py", line 1' for i in range(500)),
    ]
    filt = StderrFilter("[rank0]:")
    out = [kept for line in deep for kept in filt.feed(line)]
    assert out == deep and filt.flush() == []
