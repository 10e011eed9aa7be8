"""Turn SANY's parse and semantic error output (plain text, not tool-mode messages) into
`file:line:col: message` lines."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

_PARSING = re.compile(r"^Parsing file (.+)$")
_FATAL = re.compile(r"^Fatal errors while parsing TLA\+ spec in file (\S+)")
_LEXICAL = re.compile(r"^Lexical error at line (\d+), column (\d+)\.\s*(.*)$")
_AT = re.compile(r"at line (\d+), column (\d+)")
_LOCATION = re.compile(r"^line (\d+), col (\d+) to line \d+, col \d+ of module (\w+)\s*$")
_SECTION = re.compile(r"^\*\*\* (Errors|Warnings|Abort messages): \d+")
_MISSING = re.compile(r"Cannot find source file for module (\w+)")

Locate = Callable[[str], str]


def sany_errors(lines: Sequence[str], locate: Locate) -> list[str]:
    """Errors found in SANY's output; `locate` maps a module name or file path to a path."""
    errors: list[str] = []
    current = ""  # the file being parsed
    section = ""
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if (m := _PARSING.match(line)) or (m := _FATAL.match(line)):
            current = locate(m.group(1))
        elif m := _LEXICAL.match(line):
            errors.append(f"{current}:{m.group(1)}:{m.group(2)}: lexical error: {m.group(3)}")
        elif line == "***Parse Error***":
            i, detail = _paragraph(lines, i + 1)
            at = _AT.search(detail)
            where = f"{current}:{at.group(1)}:{at.group(2)}" if at else current
            errors.append(f"{where}: parse error: {detail}")
            continue
        elif m := _SECTION.match(line):
            section = m.group(1)
        elif (m := _LOCATION.match(line)) and section == "Errors":
            i, detail = _paragraph(lines, i + 1)
            errors.append(f"{locate(m.group(3))}:{m.group(1)}:{m.group(2)}: {detail}")
            continue
        elif (m := _MISSING.search(line)) and not errors:
            errors.append(f"{locate(m.group(1))}: cannot find the module {m.group(1)}")
        i += 1
    return errors


def _paragraph(lines: Sequence[str], i: int) -> tuple[int, str]:
    """The first non-blank paragraph from lines[i], joined into one line; and the next index."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    out: list[str] = []
    while i < len(lines) and lines[i].strip():
        if _LOCATION.match(lines[i].strip()):
            break
        out.append(lines[i].strip())
        i += 1
    return i, " ".join(out)
