"""Errors the code generator raises: each names the construct and where it is."""

from __future__ import annotations

from aegis.errors import SpecError
from codegen.ir import Loc


class CodegenError(SpecError):
    """The spec cannot be turned into Python; the message says where and why."""

    def __init__(self, message: str, loc: Loc | None = None) -> None:
        self.loc = loc
        super().__init__(f"{loc}: {message}" if loc else message)


class UnsupportedError(CodegenError):
    """A TLA+ construct outside the subset codegen supports."""
