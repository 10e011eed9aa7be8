"""A throw-away directory holding copies of a spec, its cfg and the sibling modules it uses,
so that TLC's and the translator's droppings never land in the repository."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from aegis.errors import SpecError
from tools.tlc.cfg import strip_comments

_EXTENDS = re.compile(r"\bEXTENDS\s+(\w+(?:\s*,\s*\w+)*)")
_INSTANCE = re.compile(r"\bINSTANCE\s+(\w+)")


@dataclass(frozen=True)
class Workspace:
    """The temp dir and the copies in it; `modules` maps each module name to its original."""

    dir: Path
    spec: Path
    cfg: Path | None
    modules: dict[str, Path]
    original_cfg: Path | None = None

    def relocate(self, text: str) -> str:
        """Rewrite temp-dir paths in TLC's text into the original files' display paths."""
        for name, original in self.modules.items():
            text = text.replace(str(self.dir / f"{name}.tla"), display_path(original))
        if self.cfg is not None and self.original_cfg is not None:
            text = text.replace(str(self.cfg), display_path(self.original_cfg))
        return text.replace(str(self.dir) + os.sep, "")

    def locate(self, module_or_path: str) -> str:
        """The display path of a module given by name or by (temp) file path."""
        name = Path(module_or_path).name.removesuffix(".tla")
        if name in self.modules:
            return display_path(self.modules[name])
        return self.relocate(module_or_path)


def display_path(path: Path) -> str:
    """The path relative to the current directory when it lies below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def used_modules(spec: Path) -> dict[str, Path]:
    """The spec and every sibling .tla module it EXTENDS or INSTANCEs, transitively."""
    found: dict[str, Path] = {}
    todo = [spec]
    while todo:
        path = todo.pop()
        name = path.stem
        if name in found:
            continue
        found[name] = path
        text = strip_comments(path.read_text(encoding="utf-8"))
        names = [n for m in _EXTENDS.finditer(text) for n in re.findall(r"\w+", m.group(1))]
        names += _INSTANCE.findall(text)
        todo += [path.parent / f"{n}.tla" for n in names if (path.parent / f"{n}.tla").is_file()]
    return found


@contextmanager
def workspace(spec: Path, cfg: Path | None = None) -> Iterator[Workspace]:
    """Copy the spec (and cfg, and used sibling modules) into a temp dir for the duration."""
    if not spec.is_file():
        raise SpecError(f"{display_path(spec)}: spec not found")
    if cfg is not None and not cfg.is_file():
        raise SpecError(f"{display_path(cfg)}: model config not found")
    modules = used_modules(spec)
    with tempfile.TemporaryDirectory(prefix="aegis-tlc-") as tmp:
        root = Path(tmp).resolve()
        for name, path in modules.items():
            shutil.copyfile(path, root / f"{name}.tla")
        cfg_copy = None
        if cfg is not None:
            cfg_copy = root / f"{cfg.stem}.cfg"
            shutil.copyfile(cfg, cfg_copy)
        yield Workspace(root, root / spec.name, cfg_copy, modules, cfg)
