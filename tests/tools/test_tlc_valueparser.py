"""The TLC value/state parser: unit cases from real TLC output and a render round trip."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.values import Fn, ModelValue, Value, fn, render
from tools.tlc.valueparser import ValueSyntaxError, parse_state, parse_value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TRUE", True),
        ("FALSE", False),
        ("-42", -42),
        ('"a\\\\b"', "a\\b"),
        ('"say \\"hi\\""', 'say "hi"'),
        ('"t\\tn\\nr"', "t\tn\nr"),
        ("p1", ModelValue("p1")),
        ("{}", frozenset()),
        ("<<>>", ()),
        ("<< >>", ()),
        ("{-1, 1}", frozenset({-1, 1})),
        ("<<1, <<2>>, {}>>", (1, (2,), frozenset())),
        ("[a |-> 1, b |-> <<>>]", Fn({"a": 1, "b": ()})),
        ("(p1 :> -1 @@ p2 :> 0)", Fn({ModelValue("p1"): -1, ModelValue("p2"): 0})),
        ("(1 :> TRUE @@ 2 :> FALSE)", (True, False)),  # domain 1..n is a sequence
        ("(0 :> 1)", Fn({0: 1})),
        ("1..3", frozenset({1, 2, 3})),
        ("[a : {1, 2}]", frozenset({Fn({"a": 1}), Fn({"a": 2})})),
        ("[{0} -> {TRUE}]", frozenset({Fn({0: True})})),
        ("SUBSET {1}", frozenset({frozenset(), frozenset({1})})),
    ],
)
def test_parse_value(text: str, expected: Value) -> None:
    assert parse_value(text) == expected


def test_parse_state_multiline_pretty_print() -> None:
    # Verbatim from TLC 2.15 (2020-01-30): long values wrap with `<< ` ... ` >>`.
    text = (
        "/\\ e = <<[a |-> {}], <<>>, {<<>>}, (1 :> 2 @@ 3 :> 4), [a |-> 1], << >>>>\n"
        '/\\ s = <<"a\\\\b", "q\\"z", "t\\tn\\nr">>\n'
        '/\\ big = << [name |-> "worker", idx |-> 1, set |-> {-1, 1}],\n'
        '   [name |-> "worker", idx |-> 2, set |-> {-2, 2}] >>\n'
    )
    state = parse_state(text)
    assert list(state) == ["e", "s", "big"]
    assert state["e"] == (
        Fn({"a": frozenset()}),
        (),
        frozenset({()}),
        Fn({1: 2, 3: 4}),
        Fn({"a": 1}),
        (),
    )
    assert state["s"] == ("a\\b", 'q"z', "t\tn\nr")
    assert state["big"][1] == Fn({"name": "worker", "idx": 2, "set": frozenset({-2, 2})})


def test_parse_state_single_variable_and_string_keyed_pc() -> None:
    assert parse_state("x = 0") == {"x": 0}
    assert parse_state('/\\ pc = [a |-> "Bump", b |-> "Done"]') == {
        "pc": Fn({"a": "Bump", "b": "Done"})
    }


@pytest.mark.parametrize("text", ["{1,", "[a |-> ]", '"open', "<<1 2>>", "1 ..", "#", "x = "])
def test_malformed_input_is_rejected(text: str) -> None:
    with pytest.raises(ValueSyntaxError):
        parse_value(text) if "=" not in text else parse_state(text)


_KEYWORDS = {"TRUE", "FALSE", "SUBSET"}
_idents = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True).filter(
    lambda s: s not in _KEYWORDS
)
_scalars = (
    st.booleans() | st.integers(-(2**31), 2**31 - 1) | st.text(max_size=6) | _idents.map(ModelValue)
)
_keys = st.integers(-3, 5) | _idents.map(ModelValue) | st.booleans()


def _compound(children: st.SearchStrategy[Value]) -> st.SearchStrategy[Value]:
    return (
        st.frozensets(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(_idents, children, min_size=1, max_size=4).map(fn)  # records
        | st.dictionaries(_keys, children, max_size=4).map(fn)  # functions / sequences
    )


values = st.recursive(_scalars, _compound, max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(values)
def test_round_trip_through_render(v: Value) -> None:
    assert parse_value(render(v)) == v


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(_idents, values, min_size=1, max_size=3))
def test_state_round_trip(state: dict[str, Value]) -> None:
    text = "\n".join(f"/\\ {k} = {render(v)}" for k, v in state.items())
    assert parse_state(text) == state
