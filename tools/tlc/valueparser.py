"""A recursive-descent parser of TLC's value and state print syntax into `aegis.values`.

Grammar (what TLC prints):
  state  ::= ["/\\"] IDENT "=" value { "/\\" IDENT "=" value }
  value  ::= range [":>" range { "@@" range ":>" range }]
  range  ::= atom [".." atom]
  atom   ::= INT | STRING | TRUE | FALSE | IDENT (a model value) | "(" value ")"
           | "{" [value {"," value}] "}" | "<<" [value {"," value}] ">>"
           | "[" IDENT "|->" value {"," IDENT "|->" value} "]"      (record)
           | "[" IDENT ":" value {"," IDENT ":" value} "]"          (set of records)
           | "[" value "->" value "]"                               (set of functions)
           | "SUBSET" range
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import NoReturn

from aegis.errors import AegisError
from aegis.values import ModelValue, Value, fn, sorted_values

# Longest first: "|->" before "->", ":>" before ":".
_PUNCT: tuple[str, ...] = ("/\\", "|->", "<<", ">>", ":>", "@@", "..", "->", ":", "=")
_PUNCT += ("{", "}", "[", "]", "(", ")", ",")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", '"': '"', "\\": "\\"}
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


class ValueSyntaxError(AegisError):
    """TLC printed a value this parser does not understand."""


@dataclass(frozen=True, slots=True)
class Token:
    """One lexical token: kind is 'int', 'str', 'id', 'punct' or 'eof'."""

    kind: str
    text: str
    value: Value
    pos: int


def tokenize(text: str) -> list[Token]:
    """Split TLC output into tokens, ending with an 'eof' token."""
    toks: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c == '"':
            value, end = _string(text, i)
            toks.append(Token("str", text[i:end], value, i))
            i = end
        elif c in _WORD or (c == "-" and text[i + 1 : i + 2].isdigit()):
            end = _word_end(text, i + 1)
            toks.append(_word(text[i:end], i))
            i = end
        else:
            punct = _punct(text, i)
            toks.append(Token("punct", punct, None, i))
            i += len(punct)
    toks.append(Token("eof", "", None, n))
    return toks


def _word_end(text: str, i: int) -> int:
    """The offset after the word characters from `i` on."""
    while i < len(text) and text[i] in _WORD:
        i += 1
    return i


def _punct(text: str, i: int) -> str:
    """The punctuation at `i` (the longest that matches first in _PUNCT)."""
    punct = next((p for p in _PUNCT if text.startswith(p, i)), None)
    if punct is None:
        raise ValueSyntaxError(f"unexpected character {text[i]!r} at offset {i} in {text!r}")
    return punct


def _word(word: str, pos: int) -> Token:
    """An integer literal or an identifier."""
    digits = word[1:] if word.startswith("-") else word
    if digits.isdigit():
        return Token("int", word, int(word), pos)
    if word.startswith("-"):
        raise ValueSyntaxError(f"malformed number {word!r} at offset {pos}")
    return Token("id", word, None, pos)


def _string(text: str, start: int) -> tuple[str, int]:
    """The value of the string literal at text[start] and the offset after it."""
    out: list[str] = []
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    raise ValueSyntaxError(f"unterminated string at offset {start} in {text!r}")


class _Parser:
    """Recursive descent over a token list."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = tokenize(text)
        self.i = 0

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def at(self, text: str) -> bool:
        return self.tok.kind == "punct" and self.tok.text == text

    def take(self, text: str | None = None, kind: str | None = None) -> Token:
        tok = self.tok
        if (text is not None and (tok.kind != "punct" or tok.text != text)) or (
            kind is not None and tok.kind != kind
        ):
            want = text if text is not None else kind
            self.fail(f"expected {want!r}")
        self.i += 1
        return tok

    def fail(self, msg: str) -> NoReturn:
        got = self.tok.text or "end of input"
        raise ValueSyntaxError(f"{msg} but found {got!r} at offset {self.tok.pos} in {self.text!r}")

    def value(self) -> Value:
        first = self.range_()
        if not self.at(":>"):
            return first
        self.take(":>")
        pairs = {first: self.range_()}
        while self.at("@@"):
            self.take("@@")
            key = self.range_()
            self.take(":>")
            pairs.setdefault(key, self.range_())  # `f @@ g` prefers f
        return fn(pairs)

    def range_(self) -> Value:
        lo = self.atom()
        if not self.at(".."):
            return lo
        self.take("..")
        hi = self.atom()
        if type(lo) is not int or type(hi) is not int:
            self.fail("`..` needs integer bounds")
        return frozenset(range(lo, hi + 1))

    def atom(self) -> Value:
        tok = self.tok
        if tok.kind in ("int", "str"):
            self.i += 1
            return tok.value
        if tok.kind == "id":
            self.i += 1
            if tok.text == "SUBSET":
                return _powerset(self.range_())
            return {"TRUE": True, "FALSE": False}.get(tok.text, ModelValue(tok.text))
        if self.at("("):
            self.take("(")
            inner = self.value()
            self.take(")")
            return inner
        if self.at("{"):
            return frozenset(self.items("{", "}"))
        if self.at("<<"):
            return tuple(self.items("<<", ">>"))
        if self.at("["):
            return self.bracket()
        self.fail("expected a value")

    def items(self, open_: str, close: str) -> list[Value]:
        self.take(open_)
        out: list[Value] = []
        while not self.at(close):
            if out:
                self.take(",")
            out.append(self.value())
        self.take(close)
        return out

    def bracket(self) -> Value:
        self.take("[")
        nxt = self.peek()
        if self.tok.kind == "id" and nxt.kind == "punct" and nxt.text in ("|->", ":"):
            sep = nxt.text
            fields = self.fields(sep)
            if sep == "|->":
                return fn(fields)
            return _record_set(fields)
        dom = self.value()
        self.take("->")
        rng = self.value()
        self.take("]")
        return _function_set(dom, rng)

    def fields(self, sep: str) -> list[tuple[str, Value]]:
        out: list[tuple[str, Value]] = []
        while not self.at("]"):
            if out:
                self.take(",")
            name = self.take(kind="id").text
            self.take(sep)
            out.append((name, self.value()))
        self.take("]")
        return out

    def state(self) -> dict[str, Value]:
        out: dict[str, Value] = {}
        if self.at("/\\"):
            self.take("/\\")
        while self.tok.kind != "eof":
            if out:
                self.take("/\\")
            name = self.take(kind="id").text
            self.take("=")
            out[name] = self.value()
        return out

    def end(self) -> None:
        if self.tok.kind != "eof":
            self.fail("expected end of input")


def _powerset(s: Value) -> frozenset[Value]:
    elems = sorted_values(_as_set(s))
    subsets = itertools.chain.from_iterable(
        itertools.combinations(elems, k) for k in range(len(elems) + 1)
    )
    return frozenset(frozenset(c) for c in subsets)


def _record_set(fields: list[tuple[str, Value]]) -> frozenset[Value]:
    names = [name for name, _ in fields]
    choices = [sorted_values(_as_set(s)) for _, s in fields]
    return frozenset(fn(zip(names, combo, strict=True)) for combo in itertools.product(*choices))


def _function_set(dom: Value, rng: Value) -> frozenset[Value]:
    keys = sorted_values(_as_set(dom))
    vals = sorted_values(_as_set(rng))
    combos = itertools.product(vals, repeat=len(keys))
    return frozenset(fn(zip(keys, combo, strict=True)) for combo in combos)


def _as_set(s: Value) -> frozenset[Value]:
    if not isinstance(s, frozenset):
        raise ValueSyntaxError(f"expected a set, got {s!r}")
    return s


def parse_value(text: str) -> Value:
    """Parse one value printed by TLC (e.g. `[a |-> {1, 2}, b |-> <<"x">>]`)."""
    p = _Parser(text)
    v = p.value()
    p.end()
    return v


def parse_state(text: str) -> dict[str, Value]:
    """Parse a state printed by TLC: `/\\ x = 1\\n/\\ y = 2`, or `x = 1` for one variable."""
    p = _Parser(text)
    return p.state()
