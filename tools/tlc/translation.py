"""Check that a spec's committed PlusCal translation is current, and refresh it.

The jar's translator (pcal.trans 1.9) writes `\\* BEGIN TRANSLATION PCal-<md5>` /
`\\* END TRANSLATION TLA-<md5>` markers; rather than re-implementing its checksums we
re-translate a copy in a temp dir and compare the text between the markers, ignoring
whitespace. This also catches hand edits of the generated part.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from aegis.errors import SpecError
from tools.tlc.jar import java_command
from tools.tlc.workspace import display_path, workspace

_ALGORITHM = re.compile(r"--(?:fair\s+)?algorithm\b")
_BEGIN = re.compile(r"^[ \t]*\\\* BEGIN TRANSLATION\b.*$", re.MULTILINE)
_END = re.compile(r"^[ \t]*\\\* END TRANSLATION\b.*$", re.MULTILINE)
_PCAL_AT = re.compile(r"line (\d+), column (\d+)")


def has_pluscal(text: str) -> bool:
    """True if the module text contains a PlusCal algorithm."""
    return _ALGORITHM.search(text) is not None


def translation_body(text: str) -> str | None:
    """The text between the BEGIN and END TRANSLATION markers, or None without markers."""
    begin = _BEGIN.search(text)
    end = _END.search(text, begin.end()) if begin else None
    if begin is None or end is None:
        return None
    return text[begin.end() : end.start()]


def translated(spec: Path) -> str:
    """The spec's text with a freshly generated translation (the file itself is untouched)."""
    with workspace(spec) as ws:
        cmd = java_command("pcal.trans", "-nocfg", "-unixEOL", ws.spec.name)
        proc = subprocess.run(
            cmd, cwd=ws.dir, capture_output=True, text=True, encoding="utf-8", check=False
        )
        if proc.returncode != 0:
            raise SpecError(_pcal_error(spec, proc.stdout + proc.stderr))
        return ws.spec.read_text(encoding="utf-8")


def _pcal_error(spec: Path, output: str) -> str:
    """The translator's complaint as `file:line:col: message`."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    detail = [ln.removeprefix("-- ").strip() for ln in lines if ln.startswith("--")]
    where = display_path(spec)
    if m := _PCAL_AT.search(output):
        where += f":{m.group(1)}:{m.group(2)}"
    message = " ".join(detail) or (lines[-1] if lines else "the PlusCal translator failed")
    return f"{where}: PlusCal: {message}"


def _same(a: str, b: str) -> bool:
    return a.split() == b.split()


def is_current(spec: Path) -> bool:
    """True if the committed translation equals a fresh one, whitespace aside."""
    text = spec.read_text(encoding="utf-8")
    if not has_pluscal(text):
        return True
    committed = translation_body(text)
    fresh = translation_body(translated(spec))
    return committed is not None and fresh is not None and _same(committed, fresh)


def check_translation(spec: Path | str) -> None:
    """Raise SpecError if the spec's PlusCal translation is missing or stale."""
    spec = Path(spec)
    if not spec.is_file():
        raise SpecError(f"{display_path(spec)}: spec not found")
    if not is_current(spec):
        where = display_path(spec)
        raise SpecError(
            f"{where}: the PlusCal translation is stale; run `aegis spec translate {where}`"
        )


def translate(spec: Path | str) -> bool:
    """Re-translate the spec's PlusCal in place unless current; True if the file changed."""
    spec = Path(spec)
    old = spec.read_text(encoding="utf-8") if spec.is_file() else None
    if old is None:
        raise SpecError(f"{display_path(spec)}: spec not found")
    if not has_pluscal(old):
        raise SpecError(f"{display_path(spec)}: no PlusCal algorithm to translate")
    new = translated(spec)
    committed, fresh = translation_body(old), translation_body(new)
    if committed is not None and fresh is not None and _same(committed, fresh):
        return False  # current; leave the file (and its checksum markers) alone
    spec.write_text(new, encoding="utf-8")
    return True
