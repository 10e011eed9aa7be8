"""Errors of the wire protocol: a name or a payload that does not follow the schema."""

from __future__ import annotations

from aegis.errors import AegisError


class InvalidNameError(AegisError, ValueError):
    """A namespace, job or pod name cannot be used in a NATS subject or a JWT."""


class MalformedMessage(AegisError, ValueError):
    """A bus payload does not follow the message schema; `reason` says what is wrong."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"malformed message: {reason}")
        self.reason = reason
