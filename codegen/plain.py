"""The actions of a plain TLA+ Next (no PlusCal), split and named the way TLC names them.

TLC 2.15 (`Tool.getActions`) splits Next at `\\/` and bounded `\\E`, and follows an
application of a user-defined operator whose arguments are all constant-level into its
body; an action is named after the innermost operator so reached (`Next == A \\/ \\E r \\in
R : B(r)` has actions A and B; a disjunct of Next that is neither is named Next). An
operator applied to an argument that is not constant-level (`Set(x)`, x a variable) is not
followed: the application is one action named after the operator (Set). A definition whose
body is an INSTANCE's substitution is one action named after it (TLC does not split a
substitution). Here each name becomes one action: its body is the disjunction of every
part TLC names so, with the binders and operator applications on the way kept, so the
successors per name are TLC's. An action that is exactly `\\E x \\in S : A(x)` becomes a
process set (`self` = x ∈ S).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from codegen import ir
from codegen.errors import UnsupportedError
from codegen.frontend import ModuleIndex

Wrap = Callable[[ir.Expr], ir.Expr]


@dataclass
class _Leaf:
    """One part of Next that TLC takes as an action: its name and its body in context."""

    label: str
    body: ir.Expr
    loc: ir.Loc


@dataclass
class _Splitter:
    """Walks Next, collecting leaves in Next's order."""

    index: ModuleIndex
    leaves: list[_Leaf] = field(default_factory=list)
    parts: int = 0

    def walk(self, e: ir.Expr, named: ir.OpDef, wrap: Wrap) -> None:
        if isinstance(e, ir.Builtin) and e.op == "or":
            for arg in e.args:
                self.walk(arg, named, wrap)
        elif isinstance(e, ir.Quant) and e.kind == "exists":
            q = e
            self.walk(e.body, named, lambda body: wrap(_with_body(q, body)))
        elif isinstance(e, ir.Let):
            let = e
            self.walk(e.body, named, lambda body: wrap(_with_let(let, body)))
        elif isinstance(e, ir.Call):
            op, call = self.index.defs[e.op], e
            if self.labels(e, named) == {op.name}:  # one action: keep the call whole
                self.leaves.append(_Leaf(_label(op.name, e.loc), wrap(e), op.loc))
            else:
                self.walk(op.body, op, lambda body: wrap(self._call(op, call, body)))
        else:
            self.leaves.append(_Leaf(_label(named.name, e.loc), wrap(e), named.loc))

    def labels(self, e: ir.Expr, named: ir.OpDef) -> set[str]:
        """The names TLC gives the actions of `e` (found in `named`'s body)."""
        if isinstance(e, ir.Builtin) and e.op == "or":
            return {x for arg in e.args for x in self.labels(arg, named)}
        inner = _exists_or_let_body(e)
        if inner is not None:
            return self.labels(inner, named)
        if isinstance(e, ir.Call):
            op = self.index.defs[e.op]
            if not _followed(e) or op.instanced:
                return {op.name}
            return self.labels(op.body, op)
        return {named.name}

    def _call(self, op: ir.OpDef, call: ir.Call, body: ir.Expr) -> ir.Expr:
        """`call` with the operator's body replaced by `body` (one of its parts)."""
        if body is op.body:
            return call
        self.parts += 1
        key = f"{op.name}#part{self.parts}"
        self.index.defs[key] = ir.OpDef(key, op.name, op.params, body, op.level, op.loc, False)
        return ir.Call(call.loc, call.level, key, call.args)


def plain_actions(
    index: ModuleIndex, nxt: ir.OpDef, *, whole: bool = False
) -> tuple[list[ir.Process], list[ir.Action]]:
    """Processes and actions of a plain Next, in the order Next first names each action;
    with `whole`, Next is one action (TLC does not split an INSTANCE's substitution)."""
    splitter = _Splitter(index)
    if whole:
        splitter.leaves.append(_Leaf(_label(nxt.name, nxt.loc), nxt.body, nxt.loc))
    else:
        splitter.walk(nxt.body, nxt, lambda e: e)
    grouped: dict[str, list[_Leaf]] = {}
    for leaf in splitter.leaves:
        grouped.setdefault(leaf.label, []).append(leaf)
    processes: list[ir.Process] = []
    actions: list[ir.Action] = []
    unowned: list[str] = []
    for label, leaves in grouped.items():
        first = leaves[0]
        process = _process_set(index, label, first.body) if len(leaves) == 1 else None
        if process is not None:
            op = index.defs[_call_of(first.body).op]
            processes.append(process)
            actions.append(ir.Action(label, label, op.params[0], op.body, op.loc))
            continue
        bodies = tuple(_unwrapped(index, leaf.body) for leaf in leaves)
        body = bodies[0] if len(bodies) == 1 else ir.Builtin(first.loc, 2, "or", bodies)
        unowned.append(label)
        actions.append(ir.Action(label, None, None, body, first.loc))
    if unowned:
        processes.insert(0, ir.Process(None, "none", None, tuple(unowned)))
    return processes, actions


def _process_set(index: ModuleIndex, label: str, body: ir.Expr) -> ir.Process | None:
    """`\\E x \\in S : A(x)` with A named `label` and unsplit: the process set A over S."""
    bound = _constant_bound(body)
    if bound is None:
        return None
    assert isinstance(body, ir.Quant)
    call = body.body
    if not (isinstance(call, ir.Call) and len(call.args) == 1):
        return None
    arg, op = call.args[0], index.defs[call.op]
    if not (isinstance(arg, ir.Param) and arg.ident == bound.idents[0]):
        return None
    if op.name != label or "#" in call.op:
        return None
    return ir.Process(label, "set", bound.domain, (label,))


def _constant_bound(e: ir.Expr) -> ir.Bound | None:
    """The bound of `e` when it is `\\E x \\in S : ...` (one plain x, S constant), else None."""
    if not (isinstance(e, ir.Quant) and e.kind == "exists" and len(e.bounds) == 1):
        return None
    bound = e.bounds[0]
    if bound.is_tuple or len(bound.idents) != 1 or bound.domain.level > ir.CONSTANT_LEVEL:
        return None
    return bound


def _exists_or_let_body(e: ir.Expr) -> ir.Expr | None:
    """The body of `e` when it is a LET or an \\E (whose actions are its body's), else None."""
    if isinstance(e, ir.Let) or (isinstance(e, ir.Quant) and e.kind == "exists"):
        return e.body
    return None


def _label(name: str, loc: ir.Loc) -> str:
    """An action's name, refused where it cannot be a generated Label (`I!A`)."""
    if "!" in name:
        raise UnsupportedError(
            f"TLC names this action {name}, which cannot be a generated Label: "
            f"use it inside an action of this module (A == {name} /\\ ...)",
            loc,
        )
    return name


def _followed(e: ir.Expr) -> bool:
    """Whether TLC follows `e` into its operator's body: an application of a user-defined
    operator to constant-level arguments (a bound variable of \\E is one)."""
    return isinstance(e, ir.Call) and all(a.level == ir.CONSTANT_LEVEL for a in e.args)


def _unwrapped(index: ModuleIndex, body: ir.Expr) -> ir.Expr:
    """The body of a bare `A` (an operator with no parameters), else `body` itself."""
    if isinstance(body, ir.Call) and not body.args:
        return index.defs[body.op].body
    return body


def _call_of(body: ir.Expr) -> ir.Call:
    assert isinstance(body, ir.Quant) and isinstance(body.body, ir.Call)
    return body.body


def _with_body(q: ir.Quant, body: ir.Expr) -> ir.Quant:
    return ir.Quant(q.loc, max(q.level, body.level), q.kind, q.bounds, body)


def _with_let(let: ir.Let, body: ir.Expr) -> ir.Let:
    return ir.Let(let.loc, max(let.level, body.level), let.defs, body)
