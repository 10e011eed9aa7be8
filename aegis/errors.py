"""One root error for everything Aegis raises on purpose."""


class AegisError(Exception):
    """Root of every error Aegis raises; the message says what to do."""


class SpecError(AegisError):
    """The spec or its config is missing, does not parse, or is stale."""


class ToolMissingError(AegisError):
    """An external tool (java, tla2tools.jar, nats-server, dot) is not installed."""
