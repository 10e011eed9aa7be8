"""Emitter, steps: an action (or Init) → Python statements that yield every successor.

Conjuncts are taken left to right as TLC does: `x' = e` assigns x' the first time and tests it
afterwards, `x' \\in S` enumerates S, UNCHANGED assigns the old value, \\E / either / IF / CASE
branch (the rest of the conjunction is emitted once per branch), anything else is a guard.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from codegen import ir
from codegen.errors import CodegenError, UnsupportedError
from codegen.pyenv import AND, NOT, OR, Env, Py, Scope, let_env
from codegen.pyexpr import ExprCompiler

Lines = list[str]
COMMENT_WIDTH = 96


@dataclass(frozen=True, slots=True)
class Ctx:
    """Where the emitter is on one path through the formula."""

    env: Env
    depth: int = 0
    flat: bool = True
    choices: tuple[tuple[str, str], ...] = ()
    live: frozenset[str] = frozenset()
    last_line: int = 0


K = Callable[[Ctx], Lines]


class StepCompiler:
    """Compiles one action (action mode) or Init (init mode) of a module.

    With `bind`, the generator function takes `bind` (choice name → observed value): a choice
    named there is not enumerated but tested (`v \\in S`, without building S when S is a set
    former), and each successor links to its state (`_tla.child`) so that the derived sets of
    the successor are kept current from those of `s`."""

    def __init__(
        self, module: ir.Module, exprs: ExprCompiler, init_mode: bool, *, bind: bool = False
    ) -> None:
        self.module = module
        self.exprs = exprs
        self.init_mode = init_mode
        self.bind = bind and not init_mode
        self.names: dict[int, str] = {}
        self.scope = Scope()
        self.where = ir.Loc(module.path, 0, 0)
        self.what = "Init" if init_mode else "action"

    def body(self, e: ir.Expr, env: Env, where: ir.Loc, what: str) -> Lines:
        """The statements of the generator function for formula `e` (named `what`)."""
        self.scope = env.scope
        self.where = where
        self.what = what
        return self.seq([e], Ctx(env), self.finish)

    # -- sequencing -----------------------------------------------------------------------

    def seq(self, items: list[ir.Expr], ctx: Ctx, k: K) -> Lines:
        if not items:
            return k(ctx)
        if isinstance(items[0], ir.Builtin) and items[0].op == "and":
            return self.seq(_conjuncts(items[0]) + items[1:], ctx, k)
        n = 0
        while n < len(items) and self.is_guard(items[n], ctx.env):
            n += 1
        if n:
            return self.guarded(items[:n], items[n:], ctx, k)
        return self.step(items[0], ctx, lambda c: self.seq(items[1:], c, k))

    def guarded(self, tests: list[ir.Expr], rest: list[ir.Expr], ctx: Ctx, k: K) -> Lines:
        """`rest` under the guards `tests` (a literal TRUE tests nothing)."""
        guards = [g for g in tests if not (isinstance(g, ir.Lit) and g.value is True)]
        if not guards:
            return self.seq(rest, ctx, k)
        return self.guard(guards, ctx, lambda c: self.seq(rest, c, k))

    def is_guard(self, e: ir.Expr, env: Env) -> bool:
        """Whether `e` only tests (binds nothing) at this point."""
        if self.init_mode:
            if e.level < ir.STATE_LEVEL:
                return True
        elif e.level < ir.ACTION_LEVEL:
            return True
        if isinstance(e, ir.Builtin) and e.op in ("eq", "in"):
            target = self.target(e.args[0])
            return target is None or target in env.primed
        if isinstance(e, ir.Builtin):
            return e.op not in ("and", "or", "unchanged")
        if isinstance(e, ir.Quant):
            return e.kind != "exists"
        return not isinstance(e, ir.If | ir.Case | ir.Let | ir.Call)

    def target(self, e: ir.Expr) -> str | None:
        """The variable `e` assigns: x' (action mode) or x (init mode)."""
        if isinstance(e, ir.Var) and e.primed != self.init_mode:
            return e.name
        return None

    # -- steps ----------------------------------------------------------------------------

    def step(self, e: ir.Expr, ctx: Ctx, k: K) -> Lines:
        ctx, note = self.comment(e, ctx)
        return note + self.step_of(e)(e, ctx, k)

    def step_of(self, e: ir.Expr) -> Callable[[Any, Ctx, K], Lines]:
        """The method that compiles `e` as a step of an action."""
        handler: Callable[[Any, Ctx, K], Lines] | None
        if isinstance(e, ir.Builtin):
            handler = {
                "or": self.disjunction,
                "eq": self.assign,
                "in": self.choose_value,
                "unchanged": self.unchanged,
            }.get(e.op)
        elif isinstance(e, ir.Quant):
            handler = self.exists if e.kind == "exists" else None
        else:
            steps: dict[type, Callable[[Any, Ctx, K], Lines]] = {
                ir.If: self.if_,
                ir.Case: self.case,
                ir.Let: self.let,
                ir.Call: self.call,
            }
            handler = steps.get(type(e))
        if handler is None:
            raise UnsupportedError(f"{type(e).__name__} as an action", e.loc)
        return handler

    def disjunction(self, e: ir.Builtin, ctx: Ctx, k: K) -> Lines:
        return self.branches(_disjuncts(e), ctx, k)

    def let(self, e: ir.Let, ctx: Ctx, k: K) -> Lines:
        back = ctx.env
        return self.seq(
            [e.body],
            replace(ctx, env=let_env(e, ctx.env)),
            lambda c: k(replace(c, env=_rebind(back, c.env))),
        )

    def call(self, e: ir.Call, ctx: Ctx, k: K) -> Lines:
        """A called action: its body inlined, the parameters bound to the arguments."""
        inner = self.exprs.inline_env(e, ctx.env)
        back = ctx.env
        body = self.module.defs[e.op].body
        return self.seq(
            [body], replace(ctx, env=inner), lambda c: k(replace(c, env=_rebind(back, c.env)))
        )

    def guard(self, es: list[ir.Expr], ctx: Ctx, k: K) -> Lines:
        out: Lines = []
        if ctx.flat:
            for e in es:
                ctx, note = self.comment(e, ctx)
                negated = self.exprs.negated(e, ctx.env).at(OR)
                out += [*note, self.pad(ctx, f"if {negated}:"), self.pad(ctx, "    return")]
            return out + k(ctx)
        for e in es:
            ctx, note = self.comment(e, ctx)
            out += note
        conds = [self.exprs.compile(e, ctx.env) for e in es]
        cond = conds[0] if len(conds) == 1 else Py(" and ".join(c.at(NOT) for c in conds), AND)
        return [*out, self.pad(ctx, f"if {cond.at(OR)}:"), *k(replace(ctx, depth=ctx.depth + 1))]

    def branches(self, parts: list[ir.Expr], ctx: Ctx, k: K) -> Lines:
        out: Lines = []
        for part in parts:
            out += self.seq([part], replace(ctx, flat=False), k)
        return out

    def assign(self, e: ir.Builtin, ctx: Ctx, k: K) -> Lines:
        var = self.target(e.args[0])
        assert var is not None and var not in ctx.env.primed
        value = self.exprs.compile(e.args[1], ctx.env).text
        if value == "frozenset()":
            value = "frozenset[Value]()"  # so that mypy knows the element type
        name = self.var_name(var)
        env = replace(ctx.env, primed={**ctx.env.primed, var: name})
        return [self.pad(ctx, f"{name} = {value}"), *k(replace(ctx, env=env))]

    def choose_value(self, e: ir.Builtin, ctx: Ctx, k: K) -> Lines:
        var = self.target(e.args[0])
        assert var is not None and var not in ctx.env.primed
        domain = self.exprs.compile(e.args[1], ctx.env).text
        loop = self.loop_domain(f"{var}'", e.args[1], domain, ctx.env)
        name = self.var_name(var)
        env = replace(ctx.env, primed={**ctx.env.primed, var: name}).in_loop(name)
        choices = ctx.choices if self.init_mode else (*ctx.choices, (f"{var}'", name))
        inner = replace(ctx, env=env, depth=ctx.depth + 1, flat=False, choices=choices)
        return [self.pad(ctx, f"for {name} in {loop}:"), *k(inner)]

    def loop_domain(self, choice: str, d: ir.Expr, domain: str, env: Env) -> str:
        """What a choice's loop runs over: the set in order, or only the observed value."""
        if not self.bind:
            return f"_tla.enum({domain})"
        value = f'bind["{choice}"]'
        member = self.exprs.member(value, d, env).text
        return f'(_tla.bound({value}, {member}) if "{choice}" in bind else _tla.enum({domain}))'

    def unchanged(self, e: ir.Builtin, ctx: Ctx, k: K) -> Lines:
        if self.init_mode:
            raise UnsupportedError("UNCHANGED in Init", e.loc)
        lines: Lines = []
        checks = []
        primed = dict(ctx.env.primed)
        for var in self.unchanged_vars(e.args[0]):
            if var in primed:
                checks.append(f"{primed[var]} == s.{var}")
            else:
                primed[var] = self.var_name(var)
                lines.append(self.pad(ctx, f"{primed[var]} = s.{var}"))
        ctx = replace(ctx, env=replace(ctx.env, primed=primed))
        if not checks:
            return lines + k(ctx)
        test = " and ".join(checks)
        if ctx.flat:
            stop = [self.pad(ctx, f"if not ({test}):"), self.pad(ctx, "    return")]
            return lines + stop + k(ctx)
        return [*lines, self.pad(ctx, f"if {test}:"), *k(replace(ctx, depth=ctx.depth + 1))]

    def unchanged_vars(self, e: ir.Expr) -> list[str]:
        """The variables of `UNCHANGED e`: a variable, a tuple of them, or a name for one."""
        if isinstance(e, ir.Var) and not e.primed:
            return [e.name]
        if isinstance(e, ir.Builtin) and e.op == "tuple":
            return [v for a in e.args for v in self.unchanged_vars(a)]
        if isinstance(e, ir.Call) and not e.args:
            return self.unchanged_vars(self.module.defs[e.op].body)
        raise UnsupportedError("UNCHANGED of something other than variables", e.loc)

    def if_(self, e: ir.If, ctx: Ctx, k: K) -> Lines:
        cond = self.exprs.compile(e.cond, ctx.env).at(OR)
        inner = replace(ctx, depth=ctx.depth + 1, flat=False)
        return [
            self.pad(ctx, f"if {cond}:"),
            *self.seq([e.then], inner, k),
            self.pad(ctx, "else:"),
            *self.seq([e.other], inner, k),
        ]

    def case(self, e: ir.Case, ctx: Ctx, k: K) -> Lines:
        inner = replace(ctx, depth=ctx.depth + 1, flat=False)
        out: Lines = []
        for i, (cond, value) in enumerate(e.arms):
            text = self.exprs.compile(cond, ctx.env).at(OR)
            out += [self.pad(ctx, f"{'if' if i == 0 else 'elif'} {text}:")]
            out += self.seq([value], inner, k)
        out += [self.pad(ctx, "else:")]
        if e.other is not None:
            return out + self.seq([e.other], inner, k)
        return [*out, self.pad(inner, f'_tla.case_error("{e.loc}")')]

    def exists(self, e: ir.Quant, ctx: Ctx, k: K) -> Lines:
        out: Lines = []
        env, choices, live, depth = ctx.env, ctx.choices, ctx.live, ctx.depth
        for b in e.bounds:
            domain = self.exprs.compile(b.domain, env).text
            outer = env
            names = []
            for ident in b.idents:
                name = self.bound_name(ident, live)
                live |= {name}
                env = env.bind(ident, name).in_loop(name)
                names.append(name)
                choices = (*choices, (ident.name, name))
            if b.is_tuple:
                pattern = f"({names[0]},)" if len(names) == 1 else ", ".join(names)
                loops = [(pattern, f"_tla.enum({domain})")]
            else:
                loops = [
                    (n, self.loop_domain(i.name, b.domain, domain, outer))
                    for n, i in zip(names, b.idents, strict=True)
                ]
            for pattern, loop in loops:
                out.append(self.pad(replace(ctx, depth=depth), f"for {pattern} in {loop}:"))
                depth += 1
        inner = replace(ctx, env=env, depth=depth, flat=False, choices=choices, live=live)
        return out + self.seq([e.body], inner, k)

    # -- the end of a path ----------------------------------------------------------------

    def finish(self, ctx: Ctx) -> Lines:
        missing = [v for v in self.module.variables if v not in ctx.env.primed]
        if missing:
            what = ", ".join(missing if self.init_mode else [f"{v}'" for v in missing])
            raise CodegenError(f"{self.what}: a path does not determine {what}", self.where)
        fields = ", ".join(f"{v}={ctx.env.primed[v]}" for v in self.module.variables)
        if self.init_mode:
            return [self.pad(ctx, f"yield State({fields})")]
        return [self.pad(ctx, f"yield {self.successor(ctx, fields)}")]

    def successor(self, ctx: Ctx, fields: str) -> str:
        """The Successor of a path: the new State and the choices made on the way."""
        choices = ", ".join(f'("{name}", {py})' for name, py in ctx.choices)
        tup = f"({choices},)" if len(ctx.choices) == 1 else f"({choices})"
        state = f"_tla.child(s, State({fields}))" if self.bind else f"State({fields})"
        return f"Successor({state}, {tup})"

    # -- helpers --------------------------------------------------------------------------

    def var_name(self, var: str) -> str:
        """The local holding the new value of `var` (one name per variable per function)."""
        key = -1 - self.module.variables.index(var)
        if key not in self.names:
            self.names[key] = self.scope.fresh(var if self.init_mode else f"{var}_next")
        return self.names[key]

    def bound_name(self, ident: ir.Ident, live: frozenset[str]) -> str:
        """A loop variable's name: reused across branches, fresh when the old one is live."""
        name = self.names.get(ident.uid)
        if name is None or name in live:
            name = self.scope.fresh(ident.name)
            self.names.setdefault(ident.uid, name)
        return name

    def comment(self, e: ir.Expr, ctx: Ctx) -> tuple[Ctx, Lines]:
        """A comment with the source line of `e`, once per line along a path."""
        loc = e.loc
        if loc.file != self.module.path or loc.line == ctx.last_line:
            return ctx, []
        text = self.module.source_line(loc)
        ctx = replace(ctx, last_line=loc.line)
        if not text:
            return ctx, []
        line = f"# {text}"
        room = COMMENT_WIDTH - 4 * ctx.depth
        if len(line) > room:
            line = line[: max(room - 3, 10)] + "..."
        return ctx, [self.pad(ctx, line)]

    def pad(self, ctx: Ctx, text: str) -> str:
        return "    " * ctx.depth + text


def _rebind(outer: Env, inner: Env) -> Env:
    """After an inlined operator: the caller's names, with the primes bound inside."""
    return replace(outer, primed=inner.primed)


def _conjuncts(e: ir.Expr) -> list[ir.Expr]:
    if isinstance(e, ir.Builtin) and e.op == "and":
        return [x for a in e.args for x in _conjuncts(a)]
    return [e]


def _disjuncts(e: ir.Expr) -> list[ir.Expr]:
    if isinstance(e, ir.Builtin) and e.op == "or":
        return [x for a in e.args for x in _disjuncts(a)]
    return [e]
