"""A generated module bound to a cfg's constants, with the cfg's invariants and constraints."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import attrgetter
from types import ModuleType
from typing import Any

from aegis.conformance.tlcgraph import Key
from aegis.errors import SpecError
from aegis.values import Value
from tools.tlc import TlcConfig

Predicate = Callable[[Any, Any], bool]  # (Constants, State) -> bool


@dataclass(frozen=True)
class BoundModel:
    """The generated tables of one spec with constants bound: what conformance explores."""

    module: ModuleType
    constants: Any
    invariants: dict[str, Predicate]
    constraints: dict[str, Predicate]

    @property
    def variables(self) -> tuple[str, ...]:
        """The state variables, in the module's order."""
        return tuple(self.module.VARIABLES)

    def key(self, state: Any) -> Key:
        """The state as a tuple of values in VARIABLES order."""
        return _getter(self.variables)(state)

    def state(self, key: Key) -> Any:
        """The module's State with these values."""
        return self.module.State.from_dict(dict(zip(self.variables, key, strict=True)))

    def initial_states(self) -> list[Any]:
        """Every state of Init."""
        return list(self.module.initial_states(self.constants))

    def next_states(self, state: Any) -> Iterator[tuple[str, Value, Any]]:
        """(label, process id, Successor) for every step of Next."""
        return self.module.next_states(self.constants, state)

    def violated(self, state: Any) -> list[str]:
        """The cfg's invariants that `state` violates."""
        return [name for name, holds in self.invariants.items() if not holds(self.constants, state)]

    def within(self, state: Any) -> bool:
        """Whether `state` satisfies every CONSTRAINT of the cfg."""
        return all(holds(self.constants, state) for holds in self.constraints.values())


_GETTERS: dict[tuple[str, ...], Callable[[Any], Key]] = {}


def _getter(variables: tuple[str, ...]) -> Callable[[Any], Key]:
    g = _GETTERS.get(variables)
    if g is None:
        get = attrgetter(*variables)
        g = _GETTERS[variables] = (lambda s: (get(s),)) if len(variables) == 1 else get
    return g


def package_name(spec_module: str) -> str:
    """AegisPhase → aegis_phase (the codegen's package name)."""
    out = []
    for i, ch in enumerate(spec_module):
        if ch.isupper() and i and (spec_module[i - 1].islower() or spec_module[i - 1].isdigit()):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def generated_module(spec_module: str) -> ModuleType:
    """The committed generated package of a spec; SpecError if it was never generated."""
    name = f"aegis.generated.{package_name(spec_module)}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        raise SpecError(f"{name} does not exist: run `aegis spec gen` first") from None


def bind(module: ModuleType, cfg: TlcConfig) -> BoundModel:
    """Bind the cfg's constants and look up its invariants and constraints in the module."""
    values = cfg.values()
    missing = [n for n in module.CONSTANT_NAMES if n not in values]
    if missing:
        raise SpecError(f"{cfg.where}: no value for constant(s) {', '.join(missing)}")
    constants = module.Constants(**{n: values[n] for n in module.CONSTANT_NAMES})
    invariants = {n: _predicate(module, n, module.INVARIANTS) for n in cfg.invariants}
    constraints = {n: _predicate(module, n, module.CONSTRAINTS) for n in cfg.constraints}
    return BoundModel(module, constants, invariants, constraints)


def _predicate(module: ModuleType, name: str, known: dict[str, Predicate]) -> Predicate:
    """The generated check named `name`, else the definition of that name in defs."""
    if name in known:
        return known[name]
    definition = getattr(getattr(module, "defs", None), name, None)
    if definition is None:
        raise SpecError(
            f"{module.__name__} has no definition {name!r}: regenerate it (aegis spec gen)"
        )

    def holds(c: Any, s: Any) -> bool:
        value = definition(c, s)
        if type(value) is not bool:
            raise SpecError(f"{name} is not a Boolean: {value!r}")
        return value

    return holds
