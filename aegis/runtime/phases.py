"""The spec's phase sets as the runtime uses them, read from the generated tables (not copied).

An order goes out only in the spec's `OrderPhases`, each with its message phase; a job has
ended when the spec's `Terminated` holds, and it ended in `phase`.
"""

from __future__ import annotations

from collections.abc import Mapping

from aegis.generated.aegis_phase import Constants, State, defs
from aegis.protocol.envelope import MessagePhase

# the message phase of each spec order phase (bootcheck, command, troubleshoot: docs/design.md,
# "Communication");
# tests/runtime/test_phases.py checks that its keys are exactly the spec's OrderPhases
MESSAGE_PHASES: Mapping[str, MessagePhase] = {
    "BootChecking": MessagePhase.BOOTCHECK,
    "RunCommand": MessagePhase.COMMAND,
    "Troubleshooting": MessagePhase.TROUBLESHOOT,
}


def order_phases(c: Constants) -> frozenset[str]:
    """The spec's OrderPhases: the global phases in which agents work on an order."""
    return frozenset(str(p) for p in defs.OrderPhases(c))


def message_phase(spec_phase: object) -> MessagePhase:
    """The message phase of an order or report sent in `spec_phase` (bootcheck outside them)."""
    return MESSAGE_PHASES.get(str(spec_phase), MessagePhase.BOOTCHECK)


def terminal(c: Constants, s: State) -> str | None:
    """The phase the job ended in ("Succeed" / "Failed") once the spec's Terminated holds."""
    return str(s.phase) if defs.Terminated(c, s) else None
