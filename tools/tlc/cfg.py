"""Read a TLC model config (.cfg): which constants, invariants and properties it names."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from aegis.errors import SpecError

_SECTIONS = {
    "CONSTANT": "constants",
    "CONSTANTS": "constants",
    "INIT": "init",
    "NEXT": "next",
    "SPECIFICATION": "specification",
    "INVARIANT": "invariants",
    "INVARIANTS": "invariants",
    "PROPERTY": "properties",
    "PROPERTIES": "properties",
    "CONSTRAINT": "constraints",
    "CONSTRAINTS": "constraints",
    "ACTION_CONSTRAINT": "action_constraints",
    "ACTION_CONSTRAINTS": "action_constraints",
    "SYMMETRY": "symmetry",
    "VIEW": "view",
    "CHECK_DEADLOCK": "check_deadlock",
    "POSTCONDITION": "postcondition",
    "ALIAS": "alias",
}
_TOKEN = re.compile(r'\s+|"(?:[^"\\]|\\.)*"|<-|[A-Za-z0-9_]+|.', re.DOTALL)
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"?')


@dataclass(frozen=True)
class TlcConfig:
    """The names a TLC config mentions, with the line each first appears on."""

    path: Path | None = None
    specification: str | None = None
    init: str | None = None
    next: str | None = None
    constants: dict[str, str] = field(default_factory=dict)
    invariants: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    action_constraints: tuple[str, ...] = ()
    lines: dict[str, int] = field(default_factory=dict)


def strip_comments(text: str) -> str:
    """Blank out `\\*` line comments and nested `(* *)` comments, keeping offsets and newlines."""
    out: list[str] = []
    i, depth, n = 0, 0, len(text)
    while i < n:
        two = text[i : i + 2]
        if two == "(*":
            depth += 1
            out.append("  ")
            i += 2
        elif two == "*)" and depth:
            depth -= 1
            out.append("  ")
            i += 2
        elif depth:
            out.append("\n" if text[i] == "\n" else " ")
            i += 1
        elif two == "\\*":
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text[i] == '"':
            m = _STRING.match(text, i)
            assert m is not None
            out.append(m.group())
            i = m.end()
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _tokens(text: str) -> list[tuple[str, int, int]]:
    """(token, start offset, line) for every non-blank token."""
    toks: list[tuple[str, int, int]] = []
    line = 1
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if not tok.isspace():
            toks.append((tok, m.start(), line))
        line += tok.count("\n")
    return toks


def parse_cfg(text: str, path: Path | None = None) -> TlcConfig:
    """Parse the text of a TLC config."""
    clean = strip_comments(text)
    toks = _tokens(clean)
    lists: dict[str, list[str]] = {}
    single: dict[str, str] = {}
    constants: dict[str, str] = {}
    lines: dict[str, int] = {}
    section: str | None = None
    i = 0
    while i < len(toks):
        tok, _, line = toks[i]
        if tok in _SECTIONS:
            section = _SECTIONS[tok]
            i += 1
            continue
        if section is None:
            raise SpecError(f"{path or '<cfg>'}:{line}: unexpected {tok!r} before any keyword")
        if section == "constants":
            i = _constant(clean, toks, i, constants, lines, path)
            continue
        if re.fullmatch(r"[A-Za-z0-9_]+", tok):
            lines.setdefault(tok, line)
            if section in ("specification", "init", "next", "check_deadlock", "view", "alias"):
                single[section] = tok
            else:
                lists.setdefault(section, []).append(tok)
        i += 1
    return TlcConfig(
        path=path,
        specification=single.get("specification"),
        init=single.get("init"),
        next=single.get("next"),
        constants=constants,
        invariants=tuple(lists.get("invariants", ())),
        properties=tuple(lists.get("properties", ())),
        constraints=tuple(lists.get("constraints", ())),
        action_constraints=tuple(lists.get("action_constraints", ())),
        lines=lines,
    )


def _constant(
    text: str,
    toks: list[tuple[str, int, int]],
    i: int,
    constants: dict[str, str],
    lines: dict[str, int],
    path: Path | None,
) -> int:
    """Parse `Name = value` or `Name <- Def` at toks[i]; return the index after it."""
    name, _, line = toks[i]
    if i + 1 >= len(toks) or toks[i + 1][0] not in ("=", "<-"):
        raise SpecError(f"{path or '<cfg>'}:{line}: expected `=` or `<-` after {name!r}")
    j = i + 2
    depth = 0
    while j < len(toks):
        tok = toks[j][0]
        if depth == 0 and j > i + 2 and (tok in _SECTIONS or _is_assignment(toks, j)):
            break
        depth += tok in "{[(<" and tok != "<-"
        depth -= tok in "}])>"
        j += 1
    end = toks[j][1] if j < len(toks) else len(text)
    constants[name] = text[toks[i + 2][1] : end].strip() if i + 2 < len(toks) else ""
    lines.setdefault(name, line)
    return j


def _is_assignment(toks: list[tuple[str, int, int]], j: int) -> bool:
    return j + 1 < len(toks) and toks[j + 1][0] in ("=", "<-") and toks[j][0].isidentifier()


def read_cfg(path: Path) -> TlcConfig:
    """Read and parse a TLC config file; a missing file is a SpecError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: model config not found") from None
    return parse_cfg(text, path)
