"""Operator tooling that runs next to the runtime (pod-local control)."""
