"""SANY, TLA+'s parser: its XML export of a spec (what codegen reads), and its parse and
semantic error output (plain text, not tool-mode messages) as `file:line:col: message` lines."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aegis.errors import SpecError
from tools.tlc.jar import java_command
from tools.tlc.workspace import Workspace, display_path, workspace

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
        found = _ask_sany(ws)
        raise SpecError(f"{shown}: SANY rejected the spec:\n" + "\n".join(found))


def _ask_sany(ws: Workspace) -> list[str]:
    """SANY's errors for the workspace's spec (its first 40 lines of output if none parse)."""
    cmd = java_command("tla2sany.SANY", ws.spec.name, short=True)
    sany = subprocess.run(
        cmd, cwd=ws.dir, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
    )
    lines = (sany.stdout + sany.stderr).splitlines()
    return (
        sany_errors(lines, ws.locate)
        or [ln for ln in lines if ln.strip() and not ln.lstrip().startswith(_NOISE)][:40]
    )


def sany_errors(lines: Sequence[str], locate: Locate) -> list[str]:
    """Errors found in SANY's output; `locate` maps a module name or file path to a path."""
    reader = _SanyReader(locate)
    i = 0
    while i < len(lines):
        i = reader.read(lines, i)
    return reader.errors


@dataclass
class _SanyReader:
    """SANY's output read line by line: the file being parsed, the section (Errors,
    Warnings, ...) being listed, and the errors found so far."""

    locate: Locate
    errors: list[str] = field(default_factory=list)
    current: str = ""
    section: str = ""

    def read(self, lines: Sequence[str], i: int) -> int:
        """Take lines[i] (and the paragraph it opens) into account; the next index to read."""
        line = lines[i].strip()
        if (m := _PARSING.match(line)) or (m := _FATAL.match(line)):
            self.current = self.locate(m.group(1))
        elif m := _LEXICAL.match(line):
            self.errors.append(
                f"{self.current}:{m.group(1)}:{m.group(2)}: lexical error: {m.group(3)}"
            )
        elif line == "***Parse Error***":
            return self.parse_error(lines, i + 1)
        elif m := _SECTION.match(line):
            self.section = m.group(1)
        elif (m := _LOCATION.match(line)) and self.section == "Errors":
            i, detail = _paragraph(lines, i + 1)
            self.errors.append(f"{self.locate(m.group(3))}:{m.group(1)}:{m.group(2)}: {detail}")
            return i
        elif (m := _MISSING.search(line)) and not self.errors:
            self.errors.append(f"{self.locate(m.group(1))}: cannot find the module {m.group(1)}")
        return i + 1

    def parse_error(self, lines: Sequence[str], i: int) -> int:
        """The paragraph after `***Parse Error***`, located where it says; the next index."""
        i, detail = _paragraph(lines, i)
        at = _AT.search(detail)
        where = f"{self.current}:{at.group(1)}:{at.group(2)}" if at else self.current
        self.errors.append(f"{where}: parse error: {detail}")
        return i


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
