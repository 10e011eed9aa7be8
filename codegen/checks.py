"""Checks on the Spec IR before emission: what the cfg names must be, what the emitter needs."""

from __future__ import annotations

from codegen import ir
from codegen.errors import CodegenError, UnsupportedError

_TEMPORAL = {"always": "[]", "square_act": "[A]_v", "wf": "WF_", "sf": "SF_"}


def check_spec(spec: ir.Spec) -> None:
    """Raise CodegenError on the first problem found."""
    _check_constants(spec)
    _check_predicates(spec)
    _check_actions(spec)


def _check_constants(spec: ir.Spec) -> None:
    """The cfg gives values to CONSTANTs only, and has no ACTION_CONSTRAINT."""
    cfg, module = spec.config, spec.module
    for name in sorted(cfg.constants.keys() | cfg.substitutions.keys()):
        if name in cfg.substitutions and name not in module.constants:
            raise UnsupportedError(
                f"{cfg.at(name)}: {name} <- {cfg.substitutions[name]} replaces a definition (or "
                f"a standard module's operator): not supported, only a CONSTANT may be replaced "
                f"(give {name} a value instead: {name} = ...)"
            )
        if name not in module.constants:
            raise CodegenError(f"{cfg.at(name)}: {name} is not a CONSTANT of {module.name}")
    if cfg.action_constraints:
        name = cfg.action_constraints[0]
        raise UnsupportedError(f"{cfg.at(name)}: ACTION_CONSTRAINT {name} is not supported")


def _check_predicates(spec: ir.Spec) -> None:
    """Every INVARIANT and CONSTRAINT is a defined state predicate without arguments."""
    cfg, module = spec.config, spec.module
    for kind, names in (("INVARIANT", spec.invariants), ("CONSTRAINT", spec.constraints)):
        for name in names:
            d = module.defs.get(name)
            if d is None:
                raise CodegenError(f"{cfg.at(name)}: {kind} {name} is not defined in {module.name}")
            if d.params:
                raise CodegenError(f"{kind} {name} must not take arguments", d.loc)
            if d.level > ir.STATE_LEVEL:
                raise CodegenError(f"{kind} {name} must be a state predicate", d.loc)


def _check_actions(spec: ir.Spec) -> None:
    """A PlusCal Next has actions, each label once, none using a temporal operator."""
    module = spec.module
    if "pc" in module.variables and not spec.actions:
        raise CodegenError(f"{module.path}: Next has no actions")
    labels = [a.label for a in spec.actions]
    dup = {x for x in labels if labels.count(x) > 1}
    if dup:
        raise CodegenError(f"{module.path}: labels used twice: {', '.join(sorted(dup))}")
    for a in spec.actions:
        _no_temporal(a.body, module, set())


def _no_temporal(e: ir.Expr, module: ir.Module, seen: set[str]) -> None:
    """Temporal operators cannot run: reject them inside actions and the operators they use."""
    if isinstance(e, ir.Builtin) and e.op in _TEMPORAL:
        raise UnsupportedError(f"temporal operator {_TEMPORAL[e.op]}", e.loc)
    if isinstance(e, ir.Call) and e.op not in seen:
        seen.add(e.op)
        _no_temporal(module.defs[e.op].body, module, seen)
    for child in ir.children(e):
        _no_temporal(child, module, seen)
