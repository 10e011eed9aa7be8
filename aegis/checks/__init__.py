"""The diagnosis plane: checks, the warm diagnosis worker and its client, recovery decisions.

Importing this package is cheap (names load on first use) and never imports torch; only the
worker process does. `aegis.checks.progress` stays importable from a training script for free.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aegis.checks.client import DiagnosisClient, WorkerError
    from aegis.checks.hangwatch import HangVerdict, HangWatch
    from aegis.checks.params import CheckParams, ParamsError, Rendezvous
    from aegis.checks.result import (
        BOOTCHECK_CHECKS,
        DEFAULT_BUDGETS,
        OPERATOR_CHECKS,
        TROUBLESHOOT_CHECKS,
        CheckResult,
        CheckType,
    )

_WHERE = {
    "DiagnosisClient": "client",
    "WorkerError": "client",
    "HangVerdict": "hangwatch",
    "HangWatch": "hangwatch",
    "CheckParams": "params",
    "ParamsError": "params",
    "Rendezvous": "params",
    "BOOTCHECK_CHECKS": "result",
    "DEFAULT_BUDGETS": "result",
    "OPERATOR_CHECKS": "result",
    "TROUBLESHOOT_CHECKS": "result",
    "CheckResult": "result",
    "CheckType": "result",
}
__all__ = [
    "BOOTCHECK_CHECKS",
    "DEFAULT_BUDGETS",
    "OPERATOR_CHECKS",
    "TROUBLESHOOT_CHECKS",
    "CheckParams",
    "CheckResult",
    "CheckType",
    "DiagnosisClient",
    "HangVerdict",
    "HangWatch",
    "ParamsError",
    "Rendezvous",
    "WorkerError",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'aegis.checks' has no attribute {name!r}")
    return getattr(importlib.import_module(f"aegis.checks.{_WHERE[name]}"), name)
