"""Locate a piece of a PlusCal spec by structure: a named unit, then an expression in it.

A unit is a PlusCal label's body (up to the end of its process or the next label), a
macro, or an operator definition (up to the next definition). The expression is matched
token by token, any whitespace or `\\*` comment between tokens, so re-indenting, re-wrapping
or editing nearby text does not move it. Only the source part of the file (before
`\\* BEGIN TRANSLATION`) is searched: the translation is regenerated from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aegis.errors import SpecError

TRANSLATION_MARK = "\\* BEGIN TRANSLATION"

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_DEF_START = re.compile(rf"^[ \t]*({_NAME})(?:\([^)\n]*\))?[ \t]*==", re.MULTILINE)
_LABEL = re.compile(rf"^[ \t]*({_NAME}):[ \t]*(?:\\\*.*)?$", re.MULTILINE)
_MACRO = re.compile(rf"^[ \t]*macro[ \t]+({_NAME})[ \t]*\(", re.MULTILINE)
# Lines that end an operator definition besides the next definition.
_DEF_END = re.compile(
    r"^[ \t]*(?:\}|macro\b|procedure\b|(?:fair[ \t]+)?process\b|define\b|variables?\b"
    r"|\(\*|={4,}|-{4,})",
    re.MULTILINE,
)
_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"'  # a string
    r"|\\[A-Za-z]+"  # \in, \A, \cup, ...
    r"|[A-Za-z0-9_]+"  # a name or a number
    r"|/\\|\\/|=>|<=>|:=|==|<=|>=|\|->|->|<<|>>|\]_|\.\.|@@|:>"
    r"|\S"
)
_GAP = r"(?:\s|\\\*[^\n]*)*"  # whitespace and line comments between two tokens


@dataclass(frozen=True)
class Span:
    """Offsets [start, end) into the text that was searched."""

    start: int
    end: int


def source_part(text: str) -> str:
    """The text before the translation (all of it when there is none)."""
    return text.partition(TRANSLATION_MARK)[0]


def unit_span(source: str, anchor: str) -> Span:
    """The span of the label, macro or operator named `anchor`; SpecError unless exactly one."""
    found = [*_labels(source, anchor), *_macros(source, anchor), *_definitions(source, anchor)]
    if len(found) != 1:
        raise SpecError(f"anchor {anchor}: {len(found)} labels, macros or operators, expected 1")
    return found[0]


def expression_pattern(expr: str) -> re.Pattern[str]:
    """A regex matching `expr` token by token, with any whitespace or comment between."""
    tokens = _TOKEN.findall(expr)
    if not tokens:
        raise SpecError("an anchored expression must not be empty")
    parts = []
    for i, tok in enumerate(tokens):
        if i:
            word = tokens[i - 1][-1].isalnum() and tok[0].isalnum()
            parts.append(r"(?:\s|\\\*[^\n]*)+" if word else _GAP)
        parts.append(re.escape(tok))
    head = r"(?<![A-Za-z0-9_])" if tokens[0][0].isalnum() else ""
    tail = r"(?![A-Za-z0-9_])" if tokens[-1][-1].isalnum() else ""
    return re.compile(head + "".join(parts) + tail)


def locate(text: str, anchor: str, expr: str) -> Span:
    """Where `expr` occurs in the unit `anchor` of the spec text; SpecError unless once."""
    source = source_part(text)
    unit = unit_span(source, anchor)
    hits = list(expression_pattern(expr).finditer(source, unit.start, unit.end))
    if len(hits) != 1:
        raise SpecError(f"anchor {anchor}: {expr!r} occurs {len(hits)} times in it, expected 1")
    return Span(hits[0].start(), hits[0].end())


def _labels(source: str, name: str) -> list[Span]:
    out = []
    for m in _LABEL.finditer(source):
        if m.group(1) == name:
            out.append(Span(m.start(), _end_of_label(source, m.end())))
    return out


def _end_of_label(source: str, pos: int) -> int:
    """The end of a label's body: its process closes, or the next label at its depth."""
    depth = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|\\\*[^\n]*|[{}]|\n', source[pos:]):
        tok = m.group()
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            if depth < 0:
                return pos + m.start()
        elif tok == "\n" and depth == 0:
            nxt = _LABEL.match(source, pos + m.end())
            if nxt:
                return pos + m.end()
    return len(source)


def _macros(source: str, name: str) -> list[Span]:
    out = []
    for m in _MACRO.finditer(source):
        if m.group(1) != name:
            continue
        brace = source.find("{", m.end())
        depth, i = 0, brace
        while i < len(source):
            depth += {"{": 1, "}": -1}.get(source[i], 0)
            if depth == 0:
                break
            i += 1
        out.append(Span(m.start(), i + 1))
    return out


def _definitions(source: str, name: str) -> list[Span]:
    out = []
    for m in _DEF_START.finditer(source):
        if m.group(1) != name:
            continue
        ends = [x.start() for x in (_DEF_START.search(source, m.end()),) if x]
        ends += [x.start() for x in (_DEF_END.search(source, m.end()),) if x]
        end = min(ends, default=len(source))
        out.append(Span(m.start(), _without_trailing_comments(source, m.end(), end)))
    return out


def _without_trailing_comments(source: str, start: int, end: int) -> int:
    """`end` moved back over the blank and comment-only lines that precede it."""
    lines = source[start:end].split("\n")
    while len(lines) > 1 and (not lines[-1].strip() or lines[-1].lstrip().startswith("\\*")):
        lines.pop()
    return start + len("\n".join(lines))
