"""The spec's actions with their choices bound: `A` becomes `T_A(traceChoice)`.

An action of the translation chooses with bounded existentials (`\\E w \\in S : body`);
those bound variables are exactly the choices the runtime logs. For TLC to check a logged
step *with its logged choices*, the trace module defines, for every action A of `Next`,

    T_A(traceChoice) == A's definition, each `\\E x \\in S :` turned into
                        `\\E x \\in {traceChoice.x} \\cap (S) :`, and a domain that
                        is one filter `{y \\in D : P}` into
                        `\\E x \\in {y \\in {traceChoice.x} \\cap (D) : P} :`

Only quantifier domains change, and each only shrinks to its members equal to the logged
choice, so `T_A(c) => A`: every step TLC accepts is a step of A, hence of Next (soundness
does not depend on this rewrite being clever). It is also what keeps TLC from trying every
pod as a choice. The second form is for TLC's evaluation: it computes `{c} \\cap {y \\in D :
P}`, and `c \\in {y \\in D : P}` too, by evaluating P for every member of D (every pod, at every
agentJoin and agentWork step of the log); filtering `{c} \\cap D` evaluates P once. The
rewrite keeps every character of the original at its column (the new text goes on lines of
its own, P's first line padded back to its column), since TLA+ junction lists are aligned by
column.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from aegis.errors import SpecError

CHOICE = "traceChoice"
_DEF = re.compile(r"^(\w+)\s*==", re.MULTILINE)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_PRIMED_IN = re.compile(r"\w+'\s*\\in\b")
_OPEN = {"(": ")", "[": "]", "{": "}", "<<": ">>"}
_CLOSE = {")", "]", "}", ">>"}


@dataclass(frozen=True)
class BoundAction:
    """One action's bound definition and the names of its choices."""

    label: str
    choices: tuple[str, ...]
    text: str  # the TLA+ definition of T_<label>(traceChoice)


def translation(spec_text: str) -> str:
    """The TLA+ translation part of a PlusCal spec (or the whole text if there is none)."""
    begin = spec_text.find("\\* BEGIN TRANSLATION")
    end = spec_text.find("\\* END TRANSLATION")
    if begin < 0 or end < 0:
        return spec_text
    return spec_text[spec_text.index("\n", begin) + 1 : end]


def definition(text: str, name: str) -> str:
    """The text of the top-level definition `name == ...` (up to the next one)."""
    for m in _DEF.finditer(text):
        if m.group(1) != name:
            continue
        lines = text[m.start() :].split("\n")
        body = [lines[0]]
        for line in lines[1:]:
            if line.strip() and not line[0].isspace():
                break
            body.append(line)
        return "\n".join(body).rstrip()
    raise SpecError(f"the spec's translation has no definition of {name}")


def bind_action(text: str, label: str) -> BoundAction:
    """`label`'s definition in `text`, rewritten as T_<label>(traceChoice)."""
    src = definition(text, label)
    if _PRIMED_IN.search(src):
        raise SpecError(f"{label}: a choice x' \\in S cannot be bound by trace validation")
    header = re.match(rf"{label}\s*==", src)
    assert header is not None
    body = " " * header.end() + src[header.end() :]  # same columns, header on its own line
    out: list[str] = []
    choices: list[str] = []
    pos = 0
    for binds in _exists(body, label):
        for name, (d0, d1) in binds:
            out.append(body[pos:d0])
            col = d0 - (body.rfind("\n", 0, d0) + 1)
            out.append(_bound_domain(body[d0:d1], f"{CHOICE}.{name}", col, label))
            pos = d1
            choices.append(name)
    out.append(body[pos:])
    return BoundAction(label, tuple(choices), f"T_{label}({CHOICE}) ==\n" + "".join(out))


def _bound_domain(domain: str, choice: str, col: int, label: str) -> str:
    """The domain `domain` (at column `col`) narrowed to the logged `choice`."""
    f = _filter(domain, label)
    if f is None:
        return f"{{{choice}}} \\cap (\n" + " " * col + domain + ")"
    ident, d, p = f
    head = f"{{{ident} \\in {{{choice}}} \\cap ({domain[d[0] : d[1]]}) :"
    return "(\n" + " " * col + head + "\n" + " " * (col + p) + domain[p:] + ")"


def _filter(s: str, label: str) -> tuple[str, tuple[int, int], int] | None:
    """For s = `{y \\in D : P}`, one filter on one line up to P: (y, D's span, P's start)."""
    m = re.match(r"\{\s*([A-Za-z_]\w*)\s*\\in\b", s)
    if m is None or _closing(s, 0) != len(s) - 1:
        return None
    d0 = _skip_ws(s, m.end())
    d1, stop = _domain_end(s, d0, label)
    if s[stop] != ":" or "\n" in s[:stop]:
        return None
    return m.group(1), (d0, d1), _skip_ws(s, stop + 1)


def _closing(s: str, i: int) -> int:
    """The index of the bracket that closes the one at s[i] (-1 if none)."""
    for pos, depth in _tokens(s, i):
        if depth == 0:
            return pos + 1 if s.startswith(">>", pos) else pos
    return -1


def _tokens(s: str, i: int) -> Iterator[tuple[int, int]]:
    """(position, bracket depth after it) of each character, `<<` and `>>` of s from i; a
    string literal is skipped whole."""
    depth = 0
    while i < len(s):
        two = s[i : i + 2]
        if two in ("<<", ">>"):
            depth += 1 if two == "<<" else -1
            yield i, depth
            i += 2
            continue
        c = s[i]
        if c == '"':
            i = s.index('"', i + 1) + 1
            continue
        depth += 1 if c in _OPEN else -1 if c in _CLOSE else 0
        yield i, depth
        i += 1


def _exists(body: str, label: str) -> list[list[tuple[str, tuple[int, int]]]]:
    """Every `\\E x \\in S, y \\in T :` of body: [[(name, (domain start, domain end))]]."""
    found = []
    for m in re.finditer(r"\\E\b|\\A\b|\\EE\b", body):
        if m.group() != "\\E" or _in_string_or_comment(body, m.start()):
            continue
        i = m.end()
        binds: list[tuple[str, tuple[int, int]]] = []
        while True:
            i = _skip_ws(body, i)
            ident = _IDENT.match(body, i)
            if ident is None:
                raise SpecError(f"{label}: \\E without a bound variable cannot be bound")
            i = _skip_ws(body, ident.end())
            if not body.startswith("\\in", i):
                raise SpecError(f"{label}: unbounded \\E {ident.group()} cannot be bound")
            d0 = _skip_ws(body, i + 3)
            d1, stop = _domain_end(body, d0, label)
            binds.append((ident.group(), (d0, d1)))
            i = stop + 1
            if body[stop] == ":":
                break
        found.append(binds)
    return found


def _skip_ws(s: str, i: int) -> int:
    while i < len(s) and s[i].isspace():
        i += 1
    return i


def _domain_end(s: str, i: int, label: str) -> tuple[int, int]:
    """(end of the domain without trailing blanks, index of the `,` or `:` ending it)."""
    for pos, depth in _tokens(s, i):
        c = s[pos]
        if depth == 0 and (c == "," or (c == ":" and s[pos + 1 : pos + 2] not in (":", ">"))):
            end = pos
            while s[end - 1].isspace():
                end -= 1
            return end, pos
    raise SpecError(f"{label}: cannot find the end of a \\E domain")


def _in_string_or_comment(s: str, pos: int) -> bool:
    line_start = s.rfind("\n", 0, pos) + 1
    prefix = s[line_start:pos]
    return prefix.count('"') % 2 == 1 or "\\*" in prefix
