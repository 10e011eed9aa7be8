"""SANY, TLA+'s parser: its XML export of a spec (what codegen reads), and its parse and
semantic error output (plain text, not tool-mode messages) as `file:line:col: message` lines."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from aegis.errors import SpecError
from tools.tlc.jar import java_command
from tools.tlc.workspace import display_path, workspace

_PARSING = re.compile(r"^Parsing file (.+)$")
_FATAL = re.compile(r"^Fatal errors while parsing TLA\+ spec in file (\S+)")
_LEXICAL = re.compile(r"^Lexical error at line (\d+), column (\d+)\.\s*(.*)$")
_AT = re.compile(r"at line (\d+), column (\d+)")
_LOCATION = re.compile(r"^line (\d+), col (\d+) to line \d+, col \d+ of module (\w+)\s*$")
_SECTION = re.compile(r"^\*\*\* (Errors|Warnings|Abort messages): \d+")
_MISSING = re.compile(r"Cannot find source file for module (\w+)")

_NOISE = ("Semantic processing of module", "Parsing file", "****** SANY", "failed for node")
_TIMEOUT_S = 120

Locate = Callable[[str], str]


def export_xml(spec: Path | str, display: str | None = None) -> bytes:
    """SANY's XML export of `spec` (the modules it uses beside it are visible, as for TLC);
    SpecError with SANY's located errors when it does not parse (`display`: how to name it)."""
    spec = Path(spec)
    shown = display or display_path(spec)
    if not spec.is_file():
        raise SpecError(f"{shown}: no such spec file")
    with workspace(spec) as ws:
        cmd = java_command("tla2sany.xml.XMLExporter", "-o", ws.spec.name, short=True)
        done = subprocess.run(cmd, cwd=ws.dir, capture_output=True, timeout=_TIMEOUT_S)
        xml = done.stdout.strip()
        # the exporter runs SANY's semantic analysis (level checking included) and writes its
        # errors to stderr, but exports the spec all the same: a spec SANY rejects (a
        # VARIABLE substituted for a CONSTANT, say) must be refused here, as TLC refuses it
        errors = sany_errors(done.stderr.decode("utf-8", "replace").splitlines(), ws.locate)
        if errors:
            raise SpecError(f"{shown}: SANY rejected the spec:\n" + "\n".join(errors))
        if done.returncode == 0 and xml.startswith(b"<?xml") and xml.endswith(b"</modules>"):
            return xml
        # XMLExporter buries SANY's messages in stack traces: ask SANY itself.
        cmd = java_command("tla2sany.SANY", ws.spec.name, short=True)
        sany = subprocess.run(
            cmd, cwd=ws.dir, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
        )
        lines = (sany.stdout + sany.stderr).splitlines()
        found = (
            sany_errors(lines, ws.locate)
            or [ln for ln in lines if ln.strip() and not ln.lstrip().startswith(_NOISE)][:40]
        )
        raise SpecError(f"{shown}: SANY rejected the spec:\n" + "\n".join(found))


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
