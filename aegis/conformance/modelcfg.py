"""A TLC model config as conformance needs it: constants as values, predicates by name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from aegis.errors import SpecError
from aegis.values import Value
from tools.tlc import TlcConfig, parse_value, read_cfg
from tools.tlc.cfg import strip_comments

# Config features that change which states TLC explores or prints: not supported.
_UNSUPPORTED = re.compile(r"\b(SYMMETRY|VIEW|ACTION_CONSTRAINTS?|ALIAS)\b|<-")
_NO_DEADLOCK = re.compile(r"\bCHECK_DEADLOCK\s+FALSE\b")


@dataclass(frozen=True)
class ModelConfig:
    """What a cfg binds (constant texts and values) and which predicates it checks."""

    path: Path
    config: TlcConfig
    constants: dict[str, Value]

    @property
    def invariants(self) -> tuple[str, ...]:
        """INVARIANT names, in cfg order."""
        return self.config.invariants

    @property
    def constraints(self) -> tuple[str, ...]:
        """CONSTRAINT names, in cfg order."""
        return self.config.constraints


def load_cfg(path: Path) -> ModelConfig:
    """Read a cfg; SpecError if it uses a feature conformance cannot mirror."""
    config = read_cfg(path)
    found = _UNSUPPORTED.search(strip_comments(path.read_text(encoding="utf-8")))
    if found:
        raise SpecError(f"{path}: conformance does not support {found.group()!r} in a cfg")
    constants = {name: parse_value(text) for name, text in config.constants.items()}
    return ModelConfig(path, config, constants)


def model_only_cfg(cfg: ModelConfig) -> str:
    """The cfg without PROPERTY (liveness does not change the state graph, and is slow)."""
    c = cfg.config
    lines = [f"SPECIFICATION {c.specification}"] if c.specification else []
    lines += [f"INIT {c.init}"] if c.init else []
    lines += [f"NEXT {c.next}"] if c.next else []
    lines += ["CONSTANTS"] + [f"    {k} = {v}" for k, v in c.constants.items()]
    lines += [f"INVARIANT {name}" for name in c.invariants]
    lines += [f"CONSTRAINT {name}" for name in c.constraints]
    if _NO_DEADLOCK.search(strip_comments(cfg.path.read_text(encoding="utf-8"))):
        lines.append("CHECK_DEADLOCK FALSE")
    return "\n".join(lines) + "\n"
