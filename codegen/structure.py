"""Find Init and Next's actions: the PlusCal translation's processes, labels and Terminating,
or (a spec with no PlusCal) the named actions of a plain Next (codegen/plain.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from codegen import ir
from codegen.errors import CodegenError
from codegen.frontend import ModuleIndex
from codegen.plain import plain_actions
from tools.tlc.cfg import TlcConfig
from tools.tlc.translation import has_pluscal

TERMINATING = "Terminating"


def build_spec(index: ModuleIndex, config: TlcConfig) -> ir.Spec:
    """The Spec IR of a translated PlusCal module under a model config."""
    index.override(config.constants)  # `Def = value`: TLC takes the value for Def
    init, nxt, whole = _init_and_next(index, config)
    processes, actions = _actions(index, nxt, whole)
    for name in (*config.invariants, *config.constraints):
        index.definition(name)
    return ir.Spec(
        module=index.module(),
        config=config,
        constants=config.values(),
        init=init,
        processes=tuple(processes),
        actions=tuple(actions),
        invariants=config.invariants,
        constraints=config.constraints,
        properties=config.properties,
    )


# What TLC 2.15 calls the action of a next-state relation that is no definition's (the
# `[][N]_v` of a SPECIFICATION, N neither a definition nor reached through one).
UNNAMED = "UnnamedAction"


def _init_and_next(index: ModuleIndex, config: TlcConfig) -> tuple[ir.Expr, ir.OpDef, bool]:
    """Init's predicate, Next as a definition, and whether TLC takes Next as one action
    (`whole`): INIT/NEXT from the cfg, or read off the SPECIFICATION as TLC does."""
    if config.init and config.next:
        nxt = index.definition(config.next)
        return index.definition(config.init).body, nxt, nxt.instanced
    if not config.specification:
        raise CodegenError(f"{config.where}: needs SPECIFICATION, or INIT and NEXT")
    if not index.has(config.specification):
        raise CodegenError(
            f"{index.display}: no definition named {config.specification}; is the PlusCal "
            f"translation missing? (aegis spec translate {index.display})"
        )
    spec = index.definition(config.specification)
    found = _SpecParts(index)
    found.walk(spec.body, spec.instanced)
    if not found.init or found.next is None:
        raise CodegenError(f"{spec.loc}: {spec.name} is not of the form Init /\\ [][Next]_vars")
    init = found.init[0]
    for more in found.init[1:]:
        init = ir.Builtin(more.loc, max(init.level, more.level), "and", (init, more))
    return (init, *_next_of(index, *found.next))


def _next_of(index: ModuleIndex, act: ir.Expr, substituted: bool) -> tuple[ir.OpDef, bool]:
    """The SPECIFICATION's `[][act]_v` as a definition (a named one where `act` calls one with
    no arguments; UNNAMED otherwise) and whether TLC takes it as one action."""
    if substituted:  # TLC wraps N in the INSTANCE's substitution: one action, no name
        return ir.OpDef(UNNAMED, UNNAMED, (), act, act.level, act.loc), True
    if isinstance(act, ir.Call) and not act.args:
        return index.defs[act.op], False
    return ir.OpDef(UNNAMED, UNNAMED, (), act, act.level, act.loc), False


@dataclass
class _SpecParts:
    """TLC's reading of a SPECIFICATION (Spec.processConfigSpec): a definition with no
    arguments is followed into its body, conjunctions are split, a state predicate is part of
    Init and `[][N]_v` gives Next, each remembering whether an INSTANCE's substitution was
    on the way; anything else (fairness, other temporal formulas) is no part of the model."""

    index: ModuleIndex
    init: list[ir.Expr] = field(default_factory=list)
    next: tuple[ir.Expr, bool] | None = None

    def walk(self, e: ir.Expr, substituted: bool) -> None:
        if isinstance(e, ir.Call) and not e.args:
            self.follow(self.index.defs[e.op], substituted)
        elif isinstance(e, ir.Builtin) and e.op == "and":
            for arg in e.args:
                self.walk(arg, substituted)
        elif (act := _boxed_action(e)) is not None:
            self.next = (act, substituted)
        elif e.level <= ir.STATE_LEVEL:
            self.init.append(e)

    def follow(self, op: ir.OpDef, substituted: bool) -> None:
        """A definition with no arguments: a state predicate is part of Init; any other is
        read through (under its INSTANCE's substitution, if any)."""
        if op.level <= ir.STATE_LEVEL:
            self.init.append(op.body)
        else:
            self.walk(op.body, substituted or op.instanced)


def _boxed_action(e: ir.Expr) -> ir.Expr | None:
    """N when `e` is `[][N]_v`, else None."""
    if not (isinstance(e, ir.Builtin) and e.op == "always"):
        return None
    square = e.args[0]
    if isinstance(square, ir.Builtin) and square.op == "square_act":
        return square.args[0]
    return None


def _actions(
    index: ModuleIndex, nxt: ir.OpDef, whole: bool
) -> tuple[list[ir.Process], list[ir.Action]]:
    """The translator's shapes for a PlusCal spec (an algorithm, or a ProcSet); otherwise
    plain TLA+, whose actions are named as TLC names them (a hand-written `pc` included)."""
    if not whole and (has_pluscal("\n".join(index.lines)) or index.has("ProcSet")):
        return _processes(index, nxt)
    return plain_actions(index, nxt, whole=whole)


def _processes(index: ModuleIndex, nxt: ir.OpDef) -> tuple[list[ir.Process], list[ir.Action]]:
    """Processes and actions, in the order Next lists them.

    A process operator is a disjunction of its label operators; when the translator omits
    `pc` (every process a single `while TRUE` label) it is itself the one action.
    """
    found = _Processes(index)
    for part in _flatten(nxt.body, "or"):
        if isinstance(part, ir.Call) and not part.args:
            found.add_call(index.defs[part.op])
        elif isinstance(part, ir.Quant) and part.kind == "exists" and _is_process_set(part):
            found.add_set(part)
        else:
            raise CodegenError(
                f"{nxt.name} has a disjunct the PlusCal translator does not produce", _loc(part)
            )
    return found.result()


@dataclass
class _Processes:
    """The processes and actions of Next's disjuncts, collected in order: `uniprocess` the
    labels of no process, `pcless` the indexes of single processes whose id is in ProcSet."""

    index: ModuleIndex
    processes: list[ir.Process] = field(default_factory=list)
    actions: list[ir.Action] = field(default_factory=list)
    uniprocess: list[str] = field(default_factory=list)
    pcless: list[int] = field(default_factory=list)

    def add_call(self, op: ir.OpDef) -> None:
        """A disjunct `Op`: Terminating, a label, a single process, or a pc-less process."""
        if op.name == TERMINATING:
            self.actions.append(ir.Action(TERMINATING, None, None, op.body, op.loc))
        elif _is_label(op):
            self.uniprocess.append(op.name)
            self.actions.append(ir.Action(op.name, None, None, op.body, op.loc))
        elif (labels := _label_calls(self.index, op, None)) is not None:
            ids = _single_id(labels[0])
            self.processes.append(ir.Process(op.name, "single", ids, tuple(x.name for x in labels)))
            self.actions.extend(ir.Action(x.name, op.name, None, x.body, x.loc) for x in labels)
        else:
            self.pcless.append(len(self.processes))
            self.processes.append(ir.Process(op.name, "single", None, (op.name,)))
            self.actions.append(ir.Action(op.name, op.name, None, op.body, op.loc))

    def add_set(self, part: ir.Quant) -> None:
        """A disjunct `\\E self \\in S: P(self)`: a process set and its labels."""
        call = part.body
        assert isinstance(call, ir.Call)
        op = self.index.defs[call.op]
        name, domain = op.name, part.bounds[0].domain
        labels = _label_calls(self.index, op, op.params[0]) or [op]
        self.processes.append(ir.Process(name, "set", domain, tuple(x.name for x in labels)))
        self.actions.extend(ir.Action(x.name, name, x.params[0], x.body, x.loc) for x in labels)

    def result(self) -> tuple[list[ir.Process], list[ir.Action]]:
        processes = self.processes
        if self.pcless:
            processes = _ids_from_procset(self.index, processes, self.pcless)
        if self.uniprocess:
            processes.insert(0, ir.Process(None, "none", None, tuple(self.uniprocess)))
        return processes, self.actions


def _ids_from_procset(
    index: ModuleIndex, processes: list[ir.Process], missing: list[int]
) -> list[ir.Process]:
    """Ids of pc-less single processes: ProcSet == {p1} \\cup ... lists them in Next's order."""
    if not index.has("ProcSet"):
        where = index.defs[processes[missing[0]].labels[0]].loc
        raise CodegenError("no ProcSet to take this process's id from", where)
    procset = index.definition("ProcSet")
    parts = _flatten(procset.body, "union")
    if len(parts) != len(processes):
        raise CodegenError("ProcSet does not list one set per process of Next", procset.loc)
    out = list(processes)
    for i in missing:
        part = parts[i]
        if not (isinstance(part, ir.Builtin) and part.op == "set" and len(part.args) == 1):
            raise CodegenError(f"expected {{id}} of process {out[i].name} in ProcSet", part.loc)
        out[i] = ir.Process(out[i].name, "single", part.args[0], out[i].labels)
    return out


def _is_process_set(q: ir.Quant) -> bool:
    """`\\E self \\in S: P(self)`."""
    if len(q.bounds) != 1 or len(q.bounds[0].idents) != 1 or q.bounds[0].is_tuple:
        return False
    body = q.body
    return (
        isinstance(body, ir.Call)
        and len(body.args) == 1
        and isinstance(body.args[0], ir.Param)
        and body.args[0].ident == q.bounds[0].idents[0]
    )


def _label_calls(
    index: ModuleIndex, proc: ir.OpDef, self_param: ir.Ident | None
) -> list[ir.OpDef] | None:
    """The label operators of `P(self) == L1(self) \\/ L2(self)`; None if P is not one."""
    labels = []
    for part in _flatten(proc.body, "or"):
        if not isinstance(part, ir.Call):
            return None
        if self_param is None and part.args:
            return None
        if self_param is not None and not (
            len(part.args) == 1
            and isinstance(part.args[0], ir.Param)
            and part.args[0].ident == self_param
        ):
            return None
        op = index.defs[part.op]
        if not _is_label(op):
            return None
        labels.append(op)
    return labels


def _is_label(op: ir.OpDef) -> bool:
    """Whether op's first conjunct is `pc = "L"` or `pc[e] = "L"`."""
    return _pc_guard(op) is not None


def _pc_guard(op: ir.OpDef) -> ir.Builtin | None:
    """Op's first conjunct when it is `pc = "L"` or `pc[e] = "L"`."""
    first = _flatten(op.body, "and")[0]
    if not (isinstance(first, ir.Builtin) and first.op == "eq"):
        return None
    lhs, rhs = first.args
    if isinstance(rhs, ir.Lit) and isinstance(rhs.value, str) and _is_pc(lhs):
        return first
    return None


def _is_pc(e: ir.Expr) -> bool:
    """Whether `e` is `pc` or `pc[e]` (unprimed)."""
    if isinstance(e, ir.Builtin) and e.op == "apply":
        e = e.args[0]
    return isinstance(e, ir.Var) and e.name == "pc" and not e.primed


def _single_id(label: ir.OpDef) -> ir.Expr:
    """The process id `e` of a single process's label guard `pc[e] = "L"`."""
    guard = _pc_guard(label)
    assert guard is not None
    lhs = guard.args[0]
    if not (isinstance(lhs, ir.Builtin) and lhs.op == "apply"):
        raise CodegenError(f"{label.name}: expected pc[<process id>] in its guard", label.loc)
    ident = lhs.args[1]
    if ident.level > ir.CONSTANT_LEVEL:
        raise CodegenError(f"{label.name}: the process id must be a constant", _loc(ident))
    return ident


def _flatten(e: ir.Expr, op: str) -> list[ir.Expr]:
    """The operands of nested /\\ (op="and") or \\/ (op="or") lists."""
    if isinstance(e, ir.Builtin) and e.op == op:
        return [x for a in e.args for x in _flatten(a, op)]
    return [e]


def _loc(e: ir.Expr) -> ir.Loc:
    return e.loc
