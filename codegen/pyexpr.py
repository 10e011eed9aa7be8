"""Emitter, expressions: IR expression → Python expression text over aegis.values."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import ClassVar

from codegen import ir
from codegen.errors import CodegenError, UnsupportedError
from codegen.pyenv import (
    ADD,
    AND,
    ATOM,
    BAND,
    BOR,
    CMP,
    LAMBDA,
    MUL,
    NOT,
    OR,
    POW,
    TERNARY,
    UNARY,
    Env,
    Py,
    Thunk,
    let_env,
    lit,
    py_name,
    python_names,
)
from codegen.sites import SiteInfo, VarReads, constant_body, only_indexes

_CMP = {"eq": "==", "neq": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}
_NEGATED = {"eq": "neq", "neq": "eq", "in": "notin", "notin": "in", "lt": "ge", "ge": "lt"}
_NEGATED |= {"gt": "le", "le": "gt"}
_SWAPPED = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}
_ARITH = {"plus": ("+", ADD), "minus": ("-", ADD), "mul": ("*", MUL)}
_HELPERS = {
    "powerset": "_tla.subsets",
    "bigunion": "_tla.union",
    "domain": "domain",
    "apply": "apply",
    "product": "_tla.product",
    "div": "_tla.div",
    "mod": "_tla.mod",
    "range": "_tla.interval",
    "card": "len",
    "len": "len",
    "append": "_tla.append",
    "head": "_tla.head",
    "tail": "_tla.tail",
    "concat": "_tla.concat",
    "subseq": "_tla.subseq",
    "single": "_tla.single",
    "merge": "_tla.merge",
    "fcnset": "_tla.fcn_set",
}
_INFINITE = {"Nat": "_tla.NAT", "Int": "_tla.INT", "STRING": "_tla.STRING_SET"}
_BINARY = {"union": ("|", BOR), "inter": ("&", BAND), "setminus": ("-", ADD), **_ARITH}
# The sets `\\in` tests membership of without building them.
_SET_FORMERS = (*_INFINITE, "BOOLEAN", "seq", "powerset", "fcnset")


class ExprCompiler:
    """Compiles IR expressions under an Env.

    With `incremental`, a quantifier over a CONSTANT set whose body reads the state only
    through `v[x]` at its own bound key x (and other variables as a whole) becomes a
    `_tla.Site` whose satisfying keys the generated code keeps current from the parent
    state (re-testing only the keys that changed); the sites it made are in `sites`."""

    def __init__(self, module: ir.Module, *, incremental: bool = False) -> None:
        self.module = module
        self.incremental = incremental
        self.anchor = ""  # the definition or action being compiled (names sites, errors)
        self.sites: list[SiteInfo] = []
        self._site_names: set[str] = set()
        self.reads = VarReads(module)

    def var_reads(self, op: str) -> frozenset[str] | None:
        """Every variable definition `op` reads, through the definitions it calls."""
        return self.reads.var_reads(op)

    def take_sites(self) -> list[SiteInfo]:
        """The sites compiled since the last call (one generated module's)."""
        sites, self.sites = self.sites, []
        return sites

    def where(self, e: ir.Expr) -> str:
        """Where `e` is, for a run-time error: the spec file and the enclosing definition
        (no line number: the generated code does not change when lines move)."""
        return f"{e.loc.file} ({self.anchor})" if self.anchor else e.loc.file

    def compile(self, e: ir.Expr, env: Env) -> Py:
        """The Python expression computing `e`."""
        method = getattr(self, "_" + type(e).__name__.lower())
        result: Py = method(e, env)
        return result

    def negated(self, e: ir.Expr, env: Env) -> Py:
        """The Python expression computing `~e`, comparisons inverted."""
        if isinstance(e, ir.Builtin) and e.op in _NEGATED:
            return self.compile(replace(e, op=_NEGATED[e.op]), env)
        if isinstance(e, ir.Builtin) and e.op == "not":
            return self.compile(e.args[0], env)
        return Py(f"not {self.text(e, env, NOT)}", NOT)

    def text(self, e: ir.Expr, env: Env, prec: int = TERNARY) -> str:
        """Compiled text, parenthesised for context `prec`."""
        return self.compile(e, env).at(prec)

    # -- leaves ---------------------------------------------------------------------------

    def _lit(self, e: ir.Lit, env: Env) -> Py:
        return Py(lit(e.value), ATOM)

    def _const(self, e: ir.Const, env: Env) -> Py:
        return Py(f"c.{e.name}", ATOM)

    def _var(self, e: ir.Var, env: Env) -> Py:
        if e.primed or env.init_mode:
            name = env.primed.get(e.name)
            if name is None:
                shown = f"{e.name}'" if e.primed else e.name
                raise CodegenError(f"{shown} is used before it is assigned", e.loc)
            return Py(name, ATOM)
        if env.state is None:
            raise CodegenError(f"variable {e.name} in a constant expression", e.loc)
        return Py(f"{env.state}.{e.name}", ATOM)

    def _param(self, e: ir.Param, env: Env) -> Py:
        bound = env.params.get(e.ident.uid)
        if bound is None:
            raise CodegenError(f"unbound identifier {e.ident.name}", e.loc)
        if isinstance(bound, Thunk):
            inner = replace(bound.env, primed=env.primed, scope=env.scope)
            return self.compile(bound.expr, inner)
        return Py(bound, ATOM)

    def _at(self, e: ir.At, env: Env) -> Py:
        if env.at is None:
            raise CodegenError("@ outside an EXCEPT update", e.loc)
        env.scope.used.add(env.at)
        return Py(env.at, ATOM)

    # -- definitions ----------------------------------------------------------------------

    def _call(self, e: ir.Call, env: Env) -> Py:
        op = self.module.defs[e.op]
        inlined = e.op in env.lets or "#" in e.op  # LET, an INSTANCE's, a part of plain Next
        if inlined or op.level >= ir.ACTION_LEVEL or (env.init_mode and op.level > 0):
            return self.compile(op.body, self.inline_env(e, env))
        args = [self.text(a, env) for a in e.args]
        head = ["c"] if op.level == ir.CONSTANT_LEVEL else ["c", self.state(env, e)]
        return Py(f"{py_name(op.name)}({', '.join(head + args)})", ATOM)

    def inline_env(self, e: ir.Call, env: Env) -> Env:
        """The env for the body of the called operator: parameters bound to the arguments."""
        op = self.module.defs[e.op]
        base = env.lets.get(e.op, env if "#" in e.op else None)  # not LET: the caller's env
        if base is None:
            base = Env(self.module, env.scope, state=env.state, init_mode=env.init_mode)
        inner = replace(base, scope=env.scope, primed=env.primed, at=None)
        for ident, arg in zip(op.params, e.args, strict=True):
            inner = inner.bind(ident, Thunk(arg, env))
        return inner

    def state(self, env: Env, e: ir.Expr) -> str:
        """The name of the current state (error in constant contexts)."""
        if env.state is None:
            raise CodegenError("a state-level operator used in a constant expression", e.loc)
        return env.state

    def _let(self, e: ir.Let, env: Env) -> Py:
        return self.compile(e.body, let_env(e, env))

    # -- control --------------------------------------------------------------------------

    def _if(self, e: ir.If, env: Env) -> Py:
        cond, then, other = (self.compile(x, env) for x in (e.cond, e.then, e.other))
        return Py(f"{then.at(OR)} if {cond.at(OR)} else {other.at(TERNARY)}", TERNARY)

    def _case(self, e: ir.Case, env: Env) -> Py:
        tail = (
            self.compile(e.other, env)
            if e.other is not None
            else Py(f'_tla.case_error("{self.where(e)}")', ATOM)
        )
        for cond, value in reversed(e.arms):
            c, v = self.compile(cond, env), self.compile(value, env)
            tail = Py(f"{v.at(OR)} if {c.at(OR)} else {tail.at(TERNARY)}", TERNARY)
        return tail

    # -- binders --------------------------------------------------------------------------

    def loops(self, bounds: tuple[ir.Bound, ...], env: Env) -> tuple[str, Env, str]:
        """`for x in S for y in T` clauses, the env binding them, and the bound element."""
        clauses, elems = [], []
        inner = env
        for b in bounds:
            dom = self.text(b.domain, env, OR)
            names = []
            for ident in b.idents:
                name = env.scope.fresh(ident.name)
                inner = inner.bind(ident, name).in_loop(name)
                names.append(name)
            if b.is_tuple:
                pattern = f"({names[0]},)" if len(names) == 1 else f"({', '.join(names)})"
                clauses.append(f"for {pattern} in {dom}")
                elems.append(pattern)
            elif len(names) == 1:
                clauses.append(f"for {names[0]} in {dom}")
                elems.append(names[0])
            else:
                clauses.extend(f"for {n} in {dom}" for n in names)
                elems.extend(names)
        elem = elems[0] if len(elems) == 1 else f"({', '.join(elems)},)"
        return " ".join(clauses), inner, elem

    def _quant(self, e: ir.Quant, env: Env) -> Py:
        site = self.reads.site_reads(e, env) if self.incremental else None
        if site is not None:
            return self.site(e, env, *site)
        if e.kind == "function" and self.incremental and constant_body(e):
            dom = self.text(e.bounds[0].domain, env)
            value = self.compile(e.body, env).at(LAMBDA)
            return Py(f"_tla.const_fn({dom}, lambda: {value})", ATOM)
        return self.comprehension(e, env)

    def comprehension(self, e: ir.Quant, env: Env) -> Py:
        """`e` as a Python generator or comprehension over its bounds."""
        clauses, inner, elem = self.loops(e.bounds, env)
        body = self.compile(e.body, inner)
        if e.kind in ("exists", "forall"):
            fn = "any" if e.kind == "exists" else "all"
            return Py(f"{fn}({body.at(TERNARY)} {clauses})", ATOM)
        if e.kind == "choose":
            return Py(f'_tla.choose([{elem} {clauses} if {body.at(OR)}], "{self.where(e)}")', ATOM)
        if e.kind == "filter":
            return Py(f"frozenset({elem} {clauses} if {body.at(OR)})", ATOM)
        if e.kind == "map":
            return Py(f"frozenset({body.at(TERNARY)} {clauses})", ATOM)
        if e.kind == "function":
            return Py(f"fn(({elem}, {body.at(TERNARY)}) {clauses})", ATOM)
        raise UnsupportedError(f"binder {e.kind}", e.loc)

    # -- incremental quantifiers ----------------------------------------------------------

    def site(self, e: ir.Quant, env: Env, keyed: tuple[str, ...], reads: tuple[str, ...]) -> Py:
        """`e` as a `_tla.Site` query: exists / forall / select over its kept key set."""
        ident = e.bounds[0].idents[0]
        by_value = bool(keyed) and only_indexes(e.body, ident.uid)
        dom = self.text(e.bounds[0].domain, env)
        name = env.scope.fresh(ident.name)
        inner = replace(env, state="s").bind(ident, name)
        body = self.compile(e.body, inner).at(LAMBDA)
        const = self.site_name()
        self.sites.append(SiteInfo(const, self.anchor, keyed, reads, by_value))
        query = {"exists": "exists", "forall": "forall", "filter": "select"}[e.kind]
        return Py(f"_tla.{query}({const}, c, s, {dom}, lambda c, s, {name}: {body})", ATOM)

    def site_name(self) -> str:
        base = "_S_" + (self.anchor or "expr")
        n = 1
        while f"{base}_{n}" in self._site_names:
            n += 1
        self._site_names.add(f"{base}_{n}")
        return f"{base}_{n}"

    def member(self, value: str, d: ir.Expr, env: Env) -> Py:
        """`value \\in d` without building d when it is `{x \\in S : P}` (or a definition
        that is one): `value \\in S /\\ P(value)`. `value` is Python text (an atom)."""
        d, env = self.unfold_filter(d, env)
        if isinstance(d, ir.Quant) and d.kind == "filter" and len(d.bounds) == 1:
            b = d.bounds[0]
            if not b.is_tuple and len(b.idents) == 1:
                dom = self.member_set(b.domain, env).at(BOR)
                test = self.compile(d.body, env.bind(b.idents[0], value)).at(AND)
                return Py(f"{value} in {dom} and {test}", AND)
        return Py(f"{value} in {self.member_set(d, env).at(BOR)}", CMP)

    def unfold_filter(self, d: ir.Expr, env: Env) -> tuple[ir.Expr, Env]:
        """`d` with zero-arity state-level definitions that are filters replaced by their
        bodies, and the env those bodies are compiled in."""
        while isinstance(d, ir.Call) and not d.args and "#" not in d.op:
            op = self.module.defs[d.op]
            if op.level > ir.STATE_LEVEL or not _is_filter(self.module, op.body):
                break
            env, d = self.inline_env(d, env), op.body
        return d, env

    # -- structures -----------------------------------------------------------------------

    def _except(self, e: ir.Except, env: Env) -> Py:
        result = self.compile(e.base, env)
        for path, value in e.updates:
            at = env.scope.fresh("at")
            keys = [self.text(k, env) for k in path]
            key_tuple = f"({keys[0]},)" if len(keys) == 1 else f"({', '.join(keys)})"
            val = self.compile(value, replace(env, at=at))
            if at in env.scope.used:
                captured = sorted(python_names(val.text) & env.loop_names)
                params = ", ".join([at, *(f"{n}={n}" for n in captured)])
                upd = f"lambda {params}: {val.at(LAMBDA)}"
                result = Py(f"except_({result.at(TERNARY)}, {key_tuple}, {upd})", ATOM)
            else:
                result = Py(
                    f"_tla.except_value({result.at(TERNARY)}, {key_tuple}, {val.text})", ATOM
                )
        return result

    def _record(self, e: ir.Record, env: Env) -> Py:
        if e.kind == "record":
            items = ", ".join(f"{lit(k)}: {self.text(v, env)}" for k, v in e.fields)
            return Py(f"Fn({{{items}}})", ATOM)
        items = ", ".join(f"{lit(k)}: {self.text(v, env)}" for k, v in e.fields)
        return Py(f"_tla.record_set({{{items}}})", ATOM)

    # -- built-ins ------------------------------------------------------------------------

    def _builtin(self, e: ir.Builtin, env: Env) -> Py:
        op = "eq" if e.op == "equiv" else e.op
        if op in _CMP:
            return self.comparison(op, e.args[0], e.args[1], env)
        if op in _BINARY:
            sym, prec = _BINARY[op]
            left, right = self.text(e.args[0], env, prec), self.text(e.args[1], env, prec + 1)
            return Py(f"{left} {sym} {right}", prec)
        if op in _HELPERS:
            texts = ", ".join(self.text(a, env) for a in e.args)
            return Py(f"{_HELPERS[op]}({texts})", ATOM)
        special = self._SPECIAL.get(op)
        if special is None:
            raise UnsupportedError(f"operator {op}", e.loc)
        return special(self, e, env)

    def _conj(self, e: ir.Builtin, env: Env) -> Py:
        parts = [self.compile(a, env) for a in _flat(e, "and")]
        return Py(" and ".join(p.at(AND) for p in parts), AND)

    def _disj(self, e: ir.Builtin, env: Env) -> Py:
        parts = [self.compile(a, env) for a in _flat(e, "or")]
        return Py(" or ".join(p.at(NOT if p.prec == AND else OR) for p in parts), OR)

    def _not(self, e: ir.Builtin, env: Env) -> Py:
        return self.negated(e.args[0], env)

    def _implies(self, e: ir.Builtin, env: Env) -> Py:
        a, b = self.negated(e.args[0], env).at(NOT), self.text(e.args[1], env, NOT)
        return Py(f"{a} or {b}", OR)

    def _membership(self, e: ir.Builtin, env: Env) -> Py:
        a, b = self.text(e.args[0], env, BOR), self.member_set(e.args[1], env).at(BOR)
        return Py(f"{a} {'in' if e.op == 'in' else 'not in'} {b}", CMP)

    def _subseteq(self, e: ir.Builtin, env: Env) -> Py:
        right = self.member_set(e.args[1], env)
        left = self.compile(e.args[0], env)
        if _is_set_former(self.module, e.args[1]):
            return Py(f"_tla.subseteq({left.text}, {right.text})", ATOM)
        return Py(f"{left.at(BOR)} <= {right.at(BOR)}", CMP)

    def _neg(self, e: ir.Builtin, env: Env) -> Py:
        return Py(f"-{self.text(e.args[0], env, UNARY)}", UNARY)

    def _pow(self, e: ir.Builtin, env: Env) -> Py:
        return Py(f"{self.text(e.args[0], env, ATOM)} ** {self.text(e.args[1], env, UNARY)}", POW)

    def _tuple(self, e: ir.Builtin, env: Env) -> Py:
        items = [self.text(a, env) for a in e.args]
        return Py(f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})", ATOM)

    def _set(self, e: ir.Builtin, env: Env) -> Py:
        elements = ", ".join(self.text(a, env) for a in e.args)
        return Py(f"frozenset({{{elements}}})" if e.args else "frozenset()", ATOM)

    def _boolean(self, e: ir.Builtin, env: Env) -> Py:
        return Py("_tla.BOOLEAN", ATOM)

    def _infinite(self, e: ir.Builtin, env: Env) -> Py:
        shown = "Seq(S)" if e.op == "seq" else e.op
        raise UnsupportedError(f"{shown} is infinite: only `x \\in {shown}` is supported", e.loc)

    def _unchanged(self, e: ir.Builtin, env: Env) -> Py:
        raise UnsupportedError("UNCHANGED inside an expression", e.loc)

    # The built-ins that are neither a comparison, a binary operator nor a helper call.
    _SPECIAL: ClassVar[dict[str, Callable[[ExprCompiler, ir.Builtin, Env], Py]]] = {
        "and": _conj,
        "or": _disj,
        "not": _not,
        "implies": _implies,
        "in": _membership,
        "notin": _membership,
        "subseteq": _subseteq,
        "neg": _neg,
        "pow": _pow,
        "tuple": _tuple,
        "set": _set,
        "BOOLEAN": _boolean,
        "unchanged": _unchanged,
        **dict.fromkeys((*_INFINITE, "seq"), _infinite),
    }

    def comparison(self, op: str, left: ir.Expr, right: ir.Expr, env: Env) -> Py:
        """`left op right`, literal on the right, `is` for Booleans (as ruff wants it)."""
        if isinstance(left, ir.Lit) and not isinstance(right, ir.Lit):
            left, right, op = right, left, _SWAPPED.get(op, op)
        a, b = self.text(left, env, BOR), self.text(right, env, BOR)
        if op in ("eq", "neq") and isinstance(right, ir.Lit) and isinstance(right.value, bool):
            return Py(f"{a} {'is' if op == 'eq' else 'is not'} {b}", CMP)
        return Py(f"{a} {_CMP[op]} {b}", CMP)

    def member_set(self, e: ir.Expr, env: Env) -> Py:
        """The right side of `\\in`: infinite and function/record/subset sets stay lazy."""
        if isinstance(e, ir.Builtin) and e.op in _SET_FORMERS:
            return self.lazy_set(e, env)
        if isinstance(e, ir.Record) and e.kind == "records":
            items = ", ".join(f"{lit(k)}: {self.member_set(v, env).text}" for k, v in e.fields)
            return Py(f"_tla.RcdsOf({{{items}}})", ATOM)
        if isinstance(e, ir.Call) and not e.args and _is_set_former(self.module, e):
            return self.member_set(self.module.defs[e.op].body, self.inline_env(e, env))
        return self.compile(e, env)

    def lazy_set(self, e: ir.Builtin, env: Env) -> Py:
        """A set former (Nat, BOOLEAN, Seq(S), SUBSET S, [S -> T]) as a lazy membership test."""
        if e.op in _INFINITE:
            return Py(_INFINITE[e.op], ATOM)
        if e.op == "BOOLEAN":
            return Py("_tla.BOOLEAN_SET", ATOM)
        if e.op == "fcnset":
            dom = self.text(e.args[0], env)
            return Py(f"_tla.FcnsOf({dom}, {self.member_set(e.args[1], env).text})", ATOM)
        lazy = {"seq": "_tla.SeqOf", "powerset": "_tla.SubsetOf"}[e.op]
        return Py(f"{lazy}({self.member_set(e.args[0], env).text})", ATOM)


def _is_set_former(module: ir.Module, e: ir.Expr) -> bool:
    """Whether `e` (through zero-arity definitions) is Nat, Seq(S), [S -> T], ... ."""
    while isinstance(e, ir.Call) and not e.args:
        e = module.defs[e.op].body
    if isinstance(e, ir.Builtin):
        return e.op in _SET_FORMERS
    return isinstance(e, ir.Record) and e.kind == "records"


def _is_filter(module: ir.Module, e: ir.Expr) -> bool:
    """Whether `e` (through zero-arity definitions) is `{x \\in S : P}`."""
    while isinstance(e, ir.Call) and not e.args and "#" not in e.op:
        e = module.defs[e.op].body
    return isinstance(e, ir.Quant) and e.kind == "filter"


def _flat(e: ir.Expr, op: str) -> list[ir.Expr]:
    """The operands of nested `op` (and / or) applications."""
    if isinstance(e, ir.Builtin) and e.op == op:
        return [x for a in e.args for x in _flat(a, op)]
    return [e]
