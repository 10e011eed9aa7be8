"""The `aegis run` launcher fixture, for the real-job mutation."""

from __future__ import annotations

from ..support.launch import aegis_run

__all__ = ["aegis_run"]
