"""A state dict as leaves with paths, and back: torch.distributed.checkpoint's names, our keys.

The leaves are those DCP's `flatten_state_dict` makes (mappings are walked; a list is walked
when it holds a tensor or a walked container; anything else is one leaf), named as DCP names
them (keys joined with dots), so the `.metadata` written for a version is what `dcp.load`
expects of the same state dict. The path keeps what DCP drops: whether a dict key was an int
(an optimizer's state is keyed by parameter number), so `unflatten` gives back the state
dict that was saved, which `Optimizer.load_state_dict` needs. Empty dicts, which DCP drops,
are kept too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

# a path element: ("s", key) a str dict key, ("i", key) an int dict key, ("l", i) a list index
Elem = tuple[str, str | int]
Path = tuple[Elem, ...]


class TreeError(ValueError):
    """A state dict this module cannot flatten; the message names the entry."""


@dataclass(frozen=True)
class Leaf:
    """One leaf of a state dict: where it is, its DCP name and its value."""

    path: Path
    fqn: str
    value: object


def flatten(state: Mapping[Any, Any]) -> tuple[list[Leaf], list[Path]]:
    """The leaves of `state` in DCP's order, and the paths of its empty dicts."""
    if not isinstance(state, Mapping):
        raise TreeError(f"a state dict must be a dict, not {type(state).__name__}")
    leaves: list[Leaf] = []
    empties: list[Path] = []
    seen: dict[str, Path] = {}

    def walk(path: Path, value: object) -> None:
        if isinstance(value, Mapping):
            if not value:
                empties.append(path)
            for k, v in value.items():
                walk((*path, _key(path, k)), v)
        elif isinstance(value, list) and not terminal(value):
            for i, v in enumerate(value):
                walk((*path, ("l", i)), v)
        else:
            name = fqn(path)
            if name in seen:
                raise TreeError(
                    f"entries {_show(seen[name])} and {_show(path)} share the name {name!r}"
                )
            seen[name] = path
            leaves.append(Leaf(path, name, value))

    for k, v in state.items():
        walk((_key((), k),), v)
    return leaves, empties


def signature(state: Mapping[Any, Any]) -> tuple[list[object], list[object]]:
    """The walk `flatten` makes of `state`, as one token per node in its order (a mapping: its
    keys and their types; a walked list: its length; a leaf: None), and the leaves' values.
    Two state dicts with equal tokens flatten to the same paths and names."""
    tokens: list[object] = []
    values: list[object] = []

    def walk(value: object) -> None:
        if isinstance(value, dict) or (
            not isinstance(value, torch.Tensor) and isinstance(value, Mapping)
        ):
            tokens.append((tuple(value), tuple(map(type, value))))
            for v in value.values():
                walk(v)
        elif isinstance(value, list) and not terminal(value):
            tokens.append(len(value))
            for v in value:
                walk(v)
        else:
            tokens.append(None)
            values.append(value)

    walk(state)
    return tokens, values


def terminal(value: Sequence[object]) -> bool:
    """DCP's rule: a list is one leaf unless it holds a tensor or a container it walks."""
    for entry in value:
        if isinstance(entry, torch.Tensor):
            return False
        if isinstance(entry, Mapping):
            return False
        if isinstance(entry, list) and not terminal(entry):
            return False
    return True


def _key(path: Path, key: object) -> Elem:
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        where = _show(path) or "the top level"
        raise TreeError(f"key {key!r} under {where}: state dict keys must be str or int")
    return ("s", key) if isinstance(key, str) else ("i", key)


def fqn(path: Path) -> str:
    """DCP's name of the entry at `path`."""
    return ".".join(str(k) for _, k in path)


def _show(path: Path) -> str:
    return "".join(f"[{k!r}]" for _, k in path)


def unflatten(
    entries: Sequence[tuple[Path, object]], empties: Sequence[Path] = ()
) -> dict[Any, Any]:
    """The state dict with these leaves (and empty dicts) at their paths."""
    root: dict[Any, Any] = {}
    for path in empties:
        _place(root, path, {})
    for path, value in entries:
        _place(root, path, value)
    return root


def _place(root: dict[Any, Any], path: Path, value: object) -> None:
    node: Any = root
    for depth, (_, key) in enumerate(path):
        last = depth == len(path) - 1
        nxt: object = value if last else ({} if path[depth + 1][0] != "l" else [])
        if isinstance(node, list):
            assert isinstance(key, int)
            while len(node) <= key:
                node.append(None)
            if last or node[key] is None:
                node[key] = nxt
            node = node[key]
        else:
            if last or key not in node:
                node[key] = nxt
            node = node[key]


def path_to_json(path: Path) -> list[list[str | int]]:
    """A path as JSON (kind, key pairs)."""
    return [[kind, key] for kind, key in path]


def path_from_json(obj: object) -> Path:
    """A path from its JSON form (TreeError if it is not one)."""
    if not isinstance(obj, list):
        raise TreeError(f"not a path: {obj!r:.60}")
    out: list[Elem] = []
    for item in obj:
        ok = isinstance(item, list) and len(item) == 2
        kind, key = (item[0], item[1]) if ok else ("", "")
        if kind == "s" and isinstance(key, str):
            out.append(("s", key))
        elif kind in ("i", "l") and isinstance(key, int) and not isinstance(key, bool):
            out.append((kind, key))
        else:
            raise TreeError(f"not a path element: {item!r:.60}")
    return tuple(out)
