"""The runtime's phase sets come from the spec (generated defs), not from copies."""

from __future__ import annotations

from aegis.generated.aegis_phase import State, defs
from aegis.runtime.engine import initial_state, runtime_constants
from aegis.runtime.phases import MESSAGE_PHASES, order_phases, terminal

C = runtime_constants(["a", "b"], 2)


def test_every_order_phase_has_a_message_phase_and_nothing_else_does() -> None:
    assert set(MESSAGE_PHASES) == order_phases(C)


def _with(**changes: object) -> State:
    return State.from_dict({**initial_state(C).as_dict(), **changes})


def test_terminal_is_the_specs_terminated() -> None:
    assert terminal(C, _with(phase="Succeed")) == "Succeed"
    # Failed is terminal only once the wrap-up ran (shouldQuit, recoverCount = MaxRetry + 1)
    assert terminal(C, _with(phase="Failed")) is None
    assert terminal(C, _with(phase="Failed", shouldQuit=True, recoverCount=3)) == "Failed"
    for phase in ("Pending", "BootChecking", "RunCommand", "Restarting", "Troubleshooting"):
        s = _with(phase=phase)
        assert terminal(C, s) is None and not defs.Terminated(C, s)
