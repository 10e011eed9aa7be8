"""The generator's passes wired in order: SANY → IR → checks → phases → emit → format."""

from __future__ import annotations

import difflib
import importlib.util
import itertools
import os
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

from aegis.errors import ToolMissingError
from codegen.checks import check_spec
from codegen.emit import HEADER, emit
from codegen.errors import CodegenError
from codegen.frontend import ModuleIndex
from codegen.names import check_names
from codegen.phases import derive
from codegen.projection import emit_agent_view
from codegen.structure import build_spec
from tools.tlc.cfg import read_cfg
from tools.tlc.cfgvalues import check_values
from tools.tlc.sany import export_xml

DEFAULT_SPEC = Path("spec/AegisPhase.tla")
DEFAULT_OUT = Path("aegis/generated")
_LOADS = itertools.count(1)
PACKAGE_MARKER = (
    '"""Code generated from the TLA+ specs by codegen (see codegen/); do not edit."""\n'
)


@dataclass(frozen=True)
class Generated:
    """The formatted files of one generated package."""

    package: str
    files: dict[str, str]


def generate(
    spec: Path, cfg: Path | None = None, phase_variable: str | None = "phase"
) -> Generated:
    """Generate the Python package for `spec` (model config: `cfg`, default SPEC.cfg)."""
    spec = spec.resolve()
    cfg = (cfg or spec.with_suffix(".cfg")).resolve()
    shown = display_path(spec)
    config = read_cfg(cfg, display_path(cfg))
    check_values(config)  # a value TLC refuses (a tuple, say) is refused in its words
    index = ModuleIndex(export_xml(spec, shown), spec, shown)
    ir_spec = build_spec(index, config)
    check_spec(ir_spec)
    if phase_variable is not None and phase_variable in ir_spec.module.variables:
        ir_spec = replace(ir_spec, phase=derive(ir_spec, phase_variable))
    elif phase_variable is not None and phase_variable != "phase":
        raise CodegenError(
            f"{index.display}: no variable {phase_variable} to make a phase machine of"
        )
    emitted = emit(ir_spec)
    check_names(emitted, ir_spec.module)
    files = format_python({**emitted, **emit_agent_view(ir_spec)})
    gen = Generated(package_name(ir_spec.module.name), files)
    try_out(gen)
    return gen


TRY_STATES = 10  # try_out takes every step from at most this many initial states


def try_out(gen: Generated) -> None:
    """Import the package from a temp dir, compute its initial states under the cfg's
    constants and every step from the first few: generated code that does not run is a
    generator error, never written."""
    before = set(sys.modules)
    with tempfile.TemporaryDirectory(prefix="aegis-codegen-try-") as tmp:
        write(gen, Path(tmp))
        try:
            module = load(Path(tmp), gen.package)
            c = module.CFG_CONSTANTS
            if c is not None:
                for s in module.initial_states(c)[:TRY_STATES]:
                    module.violated_invariants(c, s)
                    for _step in module.next_states(c, s):
                        pass
        except Exception as exc:  # any failure of generated code is the generator's
            where = _generated_frame(exc, Path(tmp))
            raise CodegenError(
                f"the generated package {gen.package} does not run ({where}{exc!r}): a codegen "
                "bug, or a construct it should have refused; please report it"
            ) from exc
        finally:
            for name in set(sys.modules) - before:
                del sys.modules[name]


def _generated_frame(exc: BaseException, tmp: Path) -> str:
    """`file.py:line: ` of the innermost generated frame of the exception, if any."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{Path(exc.filename).name}:{exc.lineno}: "
    found = ""
    for frame, line in traceback.walk_tb(exc.__traceback__):
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(tmp):
            found = f"{path.name}:{line}: "
    return found


def write(gen: Generated, out: Path) -> list[Path]:
    """Write the package under `out`, removing generated files it no longer has."""
    pkg = out / gen.package
    pkg.mkdir(parents=True, exist_ok=True)
    if not (out / "__init__.py").exists():
        (out / "__init__.py").write_text(PACKAGE_MARKER, encoding="utf-8")
    for stale in _stale(gen, pkg):
        stale.unlink()
    written = []
    for name, text in sorted(gen.files.items()):
        path = pkg / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def diff(gen: Generated, out: Path) -> str:
    """A unified diff from the files under `out` to the generated ones ("" if up to date)."""
    pkg = out / gen.package
    chunks: list[str] = []
    for name, text in sorted(gen.files.items()):
        path = pkg / name
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        if old != text:
            chunks += difflib.unified_diff(
                old.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"{path} (committed)" if path.exists() else "/dev/null",
                tofile=f"{path} (generated)",
            )
    for stale in _stale(gen, pkg):
        old = stale.read_text(encoding="utf-8")
        chunks += difflib.unified_diff(
            old.splitlines(keepends=True), [], fromfile=str(stale), tofile="/dev/null"
        )
    return "".join(chunks)


def _stale(gen: Generated, pkg: Path) -> list[Path]:
    """Generated files in `pkg` that generation no longer produces."""
    if not pkg.is_dir():
        return []
    marker = HEADER.split("{", 1)[0]
    return [
        p
        for p in sorted(pkg.glob("*.py"))
        if p.name not in gen.files and p.read_text(encoding="utf-8").startswith(marker)
    ]


def format_python(files: dict[str, str]) -> dict[str, str]:
    """The files as `ruff format` (line length 100, py311) leaves them."""
    with tempfile.TemporaryDirectory(prefix="aegis-codegen-") as tmp:
        for name, text in files.items():
            (Path(tmp) / name).write_text(text, encoding="utf-8")
        cmd = [sys.executable, "-m", "ruff", "format", "--isolated", "--quiet"]
        cmd += ["--line-length", "100", "--target-version", "py311", tmp]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except FileNotFoundError as exc:  # pragma: no cover - sys.executable always exists
            raise ToolMissingError(
                "ruff is needed to format generated code: pip install ruff"
            ) from exc
        if done.returncode != 0:
            if "No module named ruff" in done.stderr:
                raise ToolMissingError("ruff is needed to format generated code: pip install ruff")
            raise CodegenError(f"generated code does not format (a codegen bug):\n{done.stderr}")
        return {name: (Path(tmp) / name).read_text(encoding="utf-8") for name in files}


def package_name(module: str) -> str:
    """AegisPhase → aegis_phase."""
    out = []
    for i, ch in enumerate(module):
        if ch.isupper() and i and (module[i - 1].islower() or module[i - 1].isdigit()):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def display_path(path: Path) -> str:
    """The path as shown in generated headers: relative to the project root when inside it."""
    root = project_root(path)
    if root is not None:
        return path.resolve().relative_to(root).as_posix()
    return path.name


def project_root(start: Path) -> Path | None:
    """The nearest directory above `start` holding pyproject.toml."""
    for parent in start.resolve().parents:
        if (parent / "pyproject.toml").is_file():
            return parent
    return None


def default_paths() -> tuple[Path, Path]:
    """The default spec and output directory, from the project root (or the cwd)."""
    root = project_root(Path(os.getcwd()) / "x") or Path(os.getcwd())
    return root / DEFAULT_SPEC, root / DEFAULT_OUT


def load(out: Path, package: str) -> ModuleType:
    """Import a generated package from `out`, under a fresh private name each time."""
    init = out / package / "__init__.py"
    if not init.is_file():
        raise CodegenError(f"{init} does not exist: run `aegis spec gen` first")
    name = f"_aegis_generated_{next(_LOADS)}_{package}"
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(init.parent)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
