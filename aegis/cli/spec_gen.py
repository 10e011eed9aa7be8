"""`aegis spec gen` (being written)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("gen", help="(not yet available)")
    p.set_defaults(func=lambda args: _todo())


def _todo() -> int:
    raise NotImplementedError("aegis spec gen is not implemented yet")
