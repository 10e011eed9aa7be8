"""CheckResult: what one diagnosis check reports, and the names and budgets of the checks."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class CheckType(StrEnum):
    """Names of the checks, verbatim from the design (§6)."""

    IO = "io"
    GPU = "gpu"
    RUNTIME = "runtime"
    RDMA = "rdma"
    ALLREDUCE_CONNECTION = "allreduce_connection"
    ALLREDUCE_PERFORMANCE = "allreduce_performance"
    HANG = "hang"
    ENV = "env"
    COLLECTIVE = "collective"
    BURN = "burn"  # operator-only compute stress; never part of a bootcheck or troubleshoot


TROUBLESHOOT_CHECKS: tuple[CheckType, ...] = (
    CheckType.IO,
    CheckType.GPU,
    CheckType.RUNTIME,
    CheckType.RDMA,
    CheckType.ALLREDUCE_CONNECTION,
    CheckType.ALLREDUCE_PERFORMANCE,
    CheckType.HANG,
)
BOOTCHECK_CHECKS: tuple[CheckType, ...] = (
    CheckType.ENV,
    CheckType.COLLECTIVE,
    CheckType.ALLREDUCE_PERFORMANCE,
)
# Checks an operator runs on demand (`aegis ctl burn`); never in an automatic round.
OPERATOR_CHECKS: tuple[CheckType, ...] = (CheckType.BURN,)

# Collective checks share one process group and run one after another, in this order.
COLLECTIVE_CHECKS: tuple[CheckType, ...] = (
    CheckType.COLLECTIVE,
    CheckType.ALLREDUCE_CONNECTION,
    CheckType.ALLREDUCE_PERFORMANCE,
)

# Seconds; the seed's budgets (§6), "ms-level" runtime rounded up to 5 s. The burn's entry is
# the slack on top of its length (`CheckParams.budget`): device setup and the last iteration.
DEFAULT_BUDGETS: Mapping[CheckType, float] = {
    CheckType.IO: 30.0,
    CheckType.GPU: 66.0,
    CheckType.RUNTIME: 5.0,
    CheckType.RDMA: 25.0,
    CheckType.ALLREDUCE_CONNECTION: 122.0,
    CheckType.ALLREDUCE_PERFORMANCE: 182.0,
    CheckType.HANG: 5.0,
    CheckType.ENV: 30.0,
    CheckType.COLLECTIVE: 122.0,
    CheckType.BURN: 30.0,
}


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome; a check that does not apply passes with `applicable=False`."""

    check_type: str
    passed: bool
    result: str
    timestamp: float
    duration_s: float
    applicable: bool = True
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """True when the check applies and did not pass."""
        return self.applicable and not self.passed

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CheckResult:
        """Inverse of `to_dict`."""
        return cls(
            check_type=str(d["check_type"]),
            passed=bool(d["passed"]),
            result=str(d["result"]),
            timestamp=float(d["timestamp"]),
            duration_s=float(d["duration_s"]),
            applicable=bool(d.get("applicable", True)),
            details=dict(d.get("details") or {}),
        )

    def to_json(self) -> str:
        """One JSON object on one line."""
        return json.dumps(self.to_dict(), sort_keys=True, default=str)

    @classmethod
    def from_json(cls, text: str) -> CheckResult:
        """Inverse of `to_json`."""
        return cls.from_dict(json.loads(text))


def passed(check: str, result: str, started: float, **details: Any) -> CheckResult:
    """A passing result for a check that began at `started` (time.monotonic())."""
    return _make(check, True, result, started, True, details)


def failed(check: str, result: str, started: float, **details: Any) -> CheckResult:
    """A failing result."""
    return _make(check, False, result, started, True, details)


def not_applicable(check: str, result: str, started: float, **details: Any) -> CheckResult:
    """A result for a check that does not apply on this node (passes vacuously)."""
    return _make(check, True, result, started, False, details)


def _make(
    check: str, ok: bool, result: str, started: float, applicable: bool, details: dict[str, Any]
) -> CheckResult:
    return CheckResult(
        check_type=str(check),
        passed=ok,
        result=result,
        timestamp=time.time(),
        duration_s=round(time.monotonic() - started, 6),
        applicable=applicable,
        details=details,
    )
