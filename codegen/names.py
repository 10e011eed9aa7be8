"""No generated name shadows another: each module-level name of a generated file is bound once."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from codegen import ir
from codegen.errors import CodegenError
from codegen.pyenv import py_name


def check_names(files: dict[str, str], module: ir.Module) -> None:
    """Raise CodegenError, at the TLA+ definition to rename, if some file binds a name twice
    at module level (a definition, an import, an assignment): the second would hide the first."""
    for file, text in sorted(files.items()):
        seen: dict[str, int] = {}
        for name, line in _bindings(ast.parse(text, filename=file)):
            if name in seen:
                raise _clash(file, name, seen[name], line, module)
            seen[name] = line


def _bindings(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """(name, line) of every name bound by a top-level statement."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            yield node.name, node.lineno
        elif isinstance(node, ast.Import | ast.ImportFrom):
            yield from ((name, node.lineno) for name in _imported(node))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            yield from ((name, node.lineno) for name in _assigned(node))


def _imported(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The names an import binds (none for `from __future__` or `*`)."""
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return
    for alias in node.names:
        if alias.name != "*":
            yield (alias.asname or alias.name).split(".")[0]


def _assigned(node: ast.Assign | ast.AnnAssign) -> Iterator[str]:
    """The names an assignment binds (every name in its targets)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        yield from (sub.id for sub in ast.walk(target) if isinstance(sub, ast.Name))


def _clash(file: str, name: str, first: int, second: int, module: ir.Module) -> CodegenError:
    """The error for `name` bound twice in `file`, located at a definition that maps to it."""
    mine = [d for key, d in module.defs.items() if "#" not in key and py_name(d.name) == name]
    what = " and ".join(d.name for d in mine) or name
    where = mine[-1].loc if mine else None
    return CodegenError(
        f"rename {what}: the generated {file} would bind {name} twice (lines {first} and "
        f"{second}), one hiding the other",
        where,
    )
