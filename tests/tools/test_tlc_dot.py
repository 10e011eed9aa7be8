"""The dot state-graph parser on real TLC output (PlusCal, two processes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.values import Fn, ModelValue
from tools.tlc import dump_state_graph, read_dot
from tools.tlc.dot import _DOT_ESCAPES, DotSyntaxError, _statement, _unescape, parse_dot


def _pc(**kw: str) -> Fn:
    return Fn({ModelValue(k): v for k, v in kw.items()})


def test_dump_state_graph_two_processes(fixtures: Path) -> None:
    g = dump_state_graph(fixtures / "TwoProcs.tla")
    assert len(g.states) == 9
    (init,) = g.initial
    assert g.states[init] == {"pc": _pc(p1="Bump", p2="Bump"), "count": 0}
    labels = {label for _, label, _ in g.edges}
    assert labels == {"Bump", "Rest", "Terminating"}
    (done,) = [i for i, s in g.states.items() if s["pc"] == _pc(p1="Done", p2="Done")]
    assert (done, "Terminating", done) in g.edges  # PlusCal's stuttering self-loop
    # every edge joins two known states; Bump adds one to count
    by_id = g.states
    for src, label, dst in g.edges:
        assert src in by_id and dst in by_id
        if label == "Bump":
            assert by_id[dst]["count"] == by_id[src]["count"] + 1


def test_string_keyed_pc_prints_as_a_record(fixtures: Path) -> None:
    g = dump_state_graph(fixtures / "TwoProcs.tla", fixtures / "TwoProcsStrings.cfg")
    (init,) = g.initial
    assert g.states[init]["pc"] == Fn({"a": "Bump", "b": "Bump"})


def test_colorized_dump_skips_the_legend(fixtures: Path) -> None:
    # Recorded with: -dump dot,colorize,actionlabels (TLC 2.15, 2020-01-30)
    g = read_dot(fixtures / "TwoProcs.colorize.dot")
    assert len(g.states) == 9 and len(g.edges) == 13 and len(g.initial) == 1
    assert all(isinstance(i, int) for i in g.states)


def _dot_quote(text: str) -> str:
    """How dot quotes a label: backslashes and quotes escaped, newlines as \\n."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@settings(max_examples=200, deadline=None)
@given(
    label=st.text(alphabet=st.sampled_from('ab /\\="\n,]['), max_size=60),
    style=st.sampled_from(["filled", '"filled"', ""]),
)
def test_a_quoted_label_reads_back_whatever_it_holds(label: str, style: str) -> None:
    # the regex reader replaced a character loop (77 s of the CI model's 97,622 labels)
    line = f"42 [label={_dot_quote(label)}" + (f",style = {style}" if style else "") + "];"
    words, attrs = _statement(line)
    assert words == ["42"]
    assert attrs["label"] == label
    assert attrs.get("style", "") == style.strip('"')


def test_an_unterminated_label_is_a_syntax_error() -> None:
    with pytest.raises(DotSyntaxError, match="cannot parse dot line"):
        parse_dot(['1 [label="/\\\\ x = 1];'])


def _unescape_one_by_one(s: str) -> str:
    """The reference: dot's escapes undone one character at a time, left to right."""
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append(_DOT_ESCAPES.get(s[i + 1], "\\" + s[i + 1]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from('\\nlrx"a\n'), max_size=40))
def test_unescape_undoes_escapes_left_to_right(text: str) -> None:
    assert _unescape(text) == _unescape_one_by_one(text)
