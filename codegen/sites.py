"""Emitter, incremental quantifiers: which quantifiers can be a `_tla.Site` (kept current per
state by the generated code) and which variables their bodies read."""

from __future__ import annotations

from dataclasses import dataclass

from codegen import ir
from codegen.pyenv import Env


@dataclass(frozen=True, slots=True)
class SiteInfo:
    """A quantifier kept current per state by the generated code (`_tla.Site`): the name of
    its module-level constant, the definition or action it is in, the variables its body
    reads at the bound key only (`keyed`) and the variables it reads otherwise (`reads`), and
    whether the body uses the key nowhere else (`by_value`: its truth is a function of the
    keyed values)."""

    const: str
    anchor: str
    keyed: tuple[str, ...]
    reads: tuple[str, ...]
    by_value: bool = False


class VarReads:
    """The variables the definitions of one module read (through the definitions they call),
    and the keyed/other split of a quantifier body's reads that decides whether it is a site."""

    def __init__(self, module: ir.Module) -> None:
        self.module = module
        self._cache: dict[str, frozenset[str] | None] = {}

    def site_reads(self, e: ir.Quant, env: Env) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """(keyed, reads) when `e` can be a site here, else None."""
        ident = _site_ident(e)
        if ident is None or not _plain_state(env) or e.body.level > ir.STATE_LEVEL:
            return None
        keyed: set[str] = set()
        reads: set[str] = set()
        if not self._reads(e.body, ident.uid, {ident.uid}, keyed, reads):
            return None
        return tuple(sorted(keyed - reads)), tuple(sorted(reads))

    def _reads(
        self, e: ir.Expr, key: int, bound: set[int], keyed: set[str], reads: set[str]
    ) -> bool:
        """Sort the variables `e` reads into keyed (only as v[key]) and reads; False if `e`
        has a free identifier, a LET, @ or a primed variable (no site then)."""
        leaf = self._leaf_reads(e, key, bound, keyed, reads)
        if leaf is not None:
            return leaf
        if isinstance(e, ir.Quant):
            bound = bound | {i.uid for b in e.bounds for i in b.idents}
        return all(self._reads(x, key, bound, keyed, reads) for x in ir.children(e))

    def _leaf_reads(
        self, e: ir.Expr, key: int, bound: set[int], keyed: set[str], reads: set[str]
    ) -> bool | None:
        """`_reads` of `e` where `e` alone decides it (a keyed read, a variable, an
        identifier, LET, @, a call a site cannot make); None to look at its children."""
        indexed = _indexed_var(e, key)
        if indexed is not None and not indexed.primed:
            keyed.add(indexed.name)
            return True
        if isinstance(e, ir.Var):
            reads.add(e.name)
            return not e.primed
        if isinstance(e, ir.Param):
            return e.ident.uid in bound
        if isinstance(e, ir.Let | ir.At):
            return False
        if isinstance(e, ir.Call) and not self._call_reads(e.op, reads):
            return False
        return None

    def _call_reads(self, op: str, reads: set[str]) -> bool:
        """Add what a called state-level definition reads to `reads`; False when a site
        cannot call it (an INSTANCE's or plain Next's part, an action, or unknown reads)."""
        if "#" in op or self.module.defs[op].level > ir.STATE_LEVEL:
            return False
        found = self.var_reads(op)
        if found is None:
            return False
        reads.update(found)
        return True

    def var_reads(self, op: str) -> frozenset[str] | None:
        """Every variable definition `op` reads, through the definitions it calls."""
        if op not in self._cache:
            self._cache[op] = None  # recursion guard
            found: set[str] = set()
            ok = self._all_vars(self.module.defs[op].body, found)
            self._cache[op] = frozenset(found) if ok else None
        return self._cache[op]

    def _all_vars(self, e: ir.Expr, found: set[str]) -> bool:
        if isinstance(e, ir.Var):
            found.add(e.name)
        if isinstance(e, ir.Let) and not self._all_defs_vars(e.defs, found):
            return False
        if isinstance(e, ir.Call) and not self._call_vars(e.op, found):
            return False
        return all(self._all_vars(x, found) for x in ir.children(e))

    def _all_defs_vars(self, keys: tuple[str, ...], found: set[str]) -> bool:
        return all(self._all_vars(self.module.defs[key].body, found) for key in keys)

    def _call_vars(self, op: str, found: set[str]) -> bool:
        """Add what a call reads: an inlined part's body, or a definition's cached reads."""
        if "#" in op:
            return self._all_vars(self.module.defs[op].body, found)
        sub = self.var_reads(op)
        if sub is None:
            return False
        found.update(sub)
        return True


def _site_ident(e: ir.Quant) -> ir.Ident | None:
    """The one plain identifier of `e`'s bound when `e` has the shape of a site (exists,
    forall or filter over one CONSTANT set), else None."""
    if e.kind not in ("exists", "forall", "filter") or len(e.bounds) != 1:
        return None
    b = e.bounds[0]
    if b.is_tuple or len(b.idents) != 1 or not isinstance(b.domain, ir.Const):
        return None
    return b.idents[0]


def _plain_state(env: Env) -> bool:
    """Whether `env` reads the current state `s` only (no init mode, no primed names)."""
    return env.state == "s" and not env.init_mode and not env.primed


def _indexed_var(e: ir.Expr, key: int) -> ir.Var | None:
    """The variable v when `e` is `v[key]` (key the identifier with uid `key`), else None."""
    if not (isinstance(e, ir.Builtin) and e.op == "apply"):
        return None
    f, arg = e.args
    if isinstance(arg, ir.Param) and arg.ident.uid == key and isinstance(f, ir.Var):
        return f
    return None


def only_indexes(e: ir.Expr, key: int) -> bool:
    """Whether `e` uses the identifier `key` only as the argument of a variable (`v[key]`)."""
    if _indexed_var(e, key) is not None:
        return True
    if isinstance(e, ir.Param):
        return e.ident.uid != key
    return all(only_indexes(x, key) for x in ir.children(e))


def constant_body(e: ir.Quant) -> bool:
    """Whether `[x \\in S |-> body]` maps every x to one value: one plain bound, and a body
    that never names x (nor holds a LET or @, whose parts live elsewhere)."""
    if len(e.bounds) != 1 or e.bounds[0].is_tuple or len(e.bounds[0].idents) != 1:
        return False
    return _never_names(e.body, e.bounds[0].idents[0].uid)


def _never_names(e: ir.Expr, uid: int) -> bool:
    if isinstance(e, ir.Param):
        return e.ident.uid != uid
    if isinstance(e, ir.Let | ir.At) or (isinstance(e, ir.Call) and "#" in e.op):
        return False
    return all(_never_names(x, uid) for x in ir.children(e))
