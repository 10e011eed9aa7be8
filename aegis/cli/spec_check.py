"""`aegis spec check` (being written)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("check", help="(not yet available)")
    p.set_defaults(func=lambda args: _todo())


def _todo() -> int:
    raise NotImplementedError("aegis spec check is not implemented yet")
