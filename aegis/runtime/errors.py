"""Errors raised by the runtime building blocks (store, transport, runner)."""

from __future__ import annotations

from aegis.errors import AegisError


class CorruptStatusError(AegisError):
    """The status file exists but cannot be read back; move it away to start fresh."""


class TransportError(AegisError):
    """A NATS or gRPC operation failed; the message names the endpoint and the cause."""


class NatsServerError(TransportError):
    """The embedded nats-server did not start, reload or stop as expected."""


class BusError(TransportError):
    """Connecting to, publishing on or requesting over the NATS bus failed."""


class NoResponders(BusError):
    """A request nobody is subscribed to receive (nats-server answered at once)."""


class NoReply(BusError):
    """A request someone received (nobody said "no responders") got no reply in time."""


class CredentialsRejected(TransportError):
    """The credential server refused the request (bad token, unknown job, malformed key)."""

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code  # the gRPC status name, e.g. "PERMISSION_DENIED"


class CredentialsUnavailable(TransportError):
    """The credential server could not be reached within the allowed attempts."""


class RunnerError(AegisError):
    """The user command could not be started or controlled."""


class CommandError(RunnerError):
    """The user command cannot start (missing, not executable, no interpreter): the user's
    error, not the node's (aegis.runtime.agent.command)."""
