"""Front end: SANY's XML export → IR (codegen.ir), decoding only the definitions asked for."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import ClassVar

from codegen import ir
from codegen.errors import CodegenError, UnsupportedError

STANDARD_MODULES = frozenset({"Naturals", "Integers", "Sequences", "FiniteSets", "TLC"})

# SANY built-in operator → IR Builtin name (None: handled structurally below).
_BUILTIN_OPS = {
    "=": "eq",
    "/=": "neq",
    "\\land": "and",
    "$ConjList": "and",
    "\\lor": "or",
    "$DisjList": "or",
    "\\lnot": "not",
    "=>": "implies",
    "\\equiv": "equiv",
    "\\in": "in",
    "\\notin": "notin",
    "\\union": "union",
    "\\intersect": "inter",
    "\\": "setminus",
    "\\subseteq": "subseteq",
    "SUBSET": "powerset",
    "UNION": "bigunion",
    "DOMAIN": "domain",
    "UNCHANGED": "unchanged",
    "$FcnApply": "apply",
    "$RcdSelect": "apply",
    "$Tuple": "tuple",
    "$SetEnumerate": "set",
    "$CartesianProd": "product",
    "$SetOfFcns": "fcnset",
    "BOOLEAN": "BOOLEAN",
    "STRING": "STRING",
    "$SquareAct": "square_act",
    "[]": "always",
    "$WF": "wf",
    "$SF": "sf",
}

# Standard-module operator → IR Builtin name.
_STANDARD_OPS = {
    "+": "plus",
    "-": "minus",
    "*": "mul",
    "\\div": "div",
    "%": "mod",
    "^": "pow",
    "<": "lt",
    ">": "gt",
    "\\leq": "le",
    "\\geq": "ge",
    "..": "range",
    "-.": "neg",
    "Nat": "Nat",
    "Int": "Int",
    "Cardinality": "card",
    "Len": "len",
    "Append": "append",
    "Head": "head",
    "Tail": "tail",
    "\\o": "concat",
    "SubSeq": "subseq",
    "Seq": "seq",
    ":>": "single",
    "@@": "merge",
}

# Standard-module operators with arguments: a cfg value cannot replace them.
_STANDARD_FNS = frozenset({"Cardinality", "Len", "Append", "Head", "Tail", "SubSeq", "Seq"})

# What to call refused built-ins in error messages.
_REFUSED = {
    "$UnboundedChoose": "unbounded CHOOSE (write CHOOSE x \\in S : P)",
    "$UnboundedExists": "unbounded \\E (write \\E x \\in S : P)",
    "$UnboundedForall": "unbounded \\A (write \\A x \\in S : P)",
    "$RecursiveFcnSpec": "recursive function definition f[x \\in S] == ...",
    "$TemporalExists": "temporal \\EE",
    "$TemporalForall": "temporal \\AA",
    "ENABLED": "ENABLED",
    "$AngleAct": "<<A>>_v",
    "<>": "temporal operator <>",
    "~>": "temporal operator ~>",
    "-+->": "temporal operator -+->",
    "\\cdot": "action composition \\cdot",
    "$Nop": "empty operator",
}

_QUANTS = {"$BoundedExists": "exists", "$BoundedForall": "forall", "$BoundedChoose": "choose"}
_REF_TAGS = ("BuiltInKindRef", "UserDefinedOpKindRef", "OpDeclNodeRef", "FormalParamNodeRef")


class ModuleIndex:
    """SANY's export of one spec; `definition(name)` decodes a definition and all it uses."""

    def __init__(self, xml: bytes, spec_path: Path, display: str) -> None:
        root = ET.fromstring(xml)
        self.name = root.findtext("RootModule") or spec_path.stem
        self.display = display
        self._dir = display.rsplit("/", 1)[0] + "/" if "/" in display else ""
        self._entries = {int(e.findtext("UID") or -1): e[1] for e in root.iter("entry")}
        self._top: dict[int, str] = {}
        self._by_name: dict[str, int] = {}
        self._constants: list[tuple[ir.Loc, str]] = []
        self._variables: list[tuple[ir.Loc, str]] = []
        self._index_modules()
        self.defs: dict[str, ir.OpDef] = {}
        self._decoding: set[str] = set()
        self._subst: dict[int, ir.Expr] = {}  # an INSTANCE's declaration uid → its value
        self._context = ""  # the key suffix of the INSTANCE being decoded ("" outside one)
        self._contexts: dict[tuple[tuple[int, ir.Expr], ...], str] = {}
        self._overridden: dict[str, ir.Loc] = {}  # definitions the cfg gives a value
        self.lines = tuple(spec_path.read_text(encoding="utf-8").splitlines())

    def _index_modules(self) -> None:
        """Collect the root module's top-level definitions, constants and variables (SANY lists
        there everything EXTENDS brings in; an INSTANCEd module's own names stay out)."""
        for node in self._entries.values():
            if node.tag != "ModuleNode" or node.findtext("uniquename") != self.name:
                continue
            for ref in node:
                self._index_ref(ref)

    def _index_ref(self, ref: ET.Element) -> None:
        """Index one name the root module lists: a definition, a constant or a variable."""
        uid = int(ref.findtext("UID") or -1)
        target = self._entries.get(uid)
        if target is None or self._file_of(target) in STANDARD_MODULES:
            return
        name = target.findtext("uniquename") or ""
        if ref.tag == "UserDefinedOpKindRef" and name not in self._by_name:
            self._top[uid] = name
            self._by_name[name] = uid
        elif ref.tag == "OpDeclNodeRef" and uid not in self._top:
            self._top[uid] = name
            kind = target.findtext("kind")
            where = self._constants if kind == "2" else self._variables
            where.append((self.loc(target), name))

    # -- declarations -------------------------------------------------------------------

    def constants(self) -> tuple[str, ...]:
        """CONSTANT names in source order (then the definitions the cfg gives a value)."""
        declared = tuple(name for _, name in sorted(set(self._constants), key=_loc_key))
        return declared + tuple(n for n in self._overridden if n not in declared)

    def override(self, names: Iterable[str]) -> None:
        """Take these names, which the cfg gives a value (`NoVal = NoVal`, `Nat = {0, 1}`),
        as constants where they name a definition with no arguments, of the spec or of a
        standard module: TLC then uses the value in place of the definition. Call before
        decoding anything."""
        declared = {name for _, name in self._constants}
        for name in names:
            if name in declared:
                continue
            uid = self._by_name.get(name)
            if uid is not None:
                node = self._entries[uid]
                if node.find("params/leibnizparam") is None:
                    self._overridden[name] = self.loc(node)
            elif name in _STANDARD_OPS and name[:1].isalpha() and name not in _STANDARD_FNS:
                self._overridden[name] = ir.Loc(self.display, 0, 0)

    def variables(self) -> tuple[str, ...]:
        """VARIABLE names in source order."""
        return tuple(name for _, name in sorted(set(self._variables), key=_loc_key))

    def top_level(self) -> tuple[str, ...]:
        """Names of all top-level user definitions, in source order."""
        found = [(self.loc(self._entries[uid]), name) for name, uid in self._by_name.items()]
        return tuple(name for _, name in sorted(found, key=_loc_key))

    def has(self, name: str) -> bool:
        """Whether a top-level definition `name` exists."""
        return name in self._by_name

    def module(self) -> ir.Module:
        """The IR module with every definition decoded so far."""
        ordered = dict(sorted(self.defs.items(), key=lambda kv: _loc_key((kv[1].loc, kv[0]))))
        return ir.Module(
            name=self.name,
            path=self.display,
            constants=self.constants(),
            variables=self.variables(),
            defs=ordered,
            top_level=self.top_level(),
            lines=self.lines,
            declared={name: loc for loc, name in (*self._constants, *self._variables)},
        )

    def definition(self, name: str) -> ir.OpDef:
        """The top-level definition `name`, decoded with everything it references."""
        if name not in self._by_name:
            raise CodegenError(f"{self.display}: no definition named {name}")
        return self._decode_def(self._by_name[name], name)

    # -- definitions ----------------------------------------------------------------------

    def _decode_def(self, uid: int, key: str) -> ir.OpDef:
        if key in self.defs:
            return self.defs[key]
        node = self._entries[uid]
        loc = self.loc(node)
        self._check_decodable(node, key, loc)
        self._decoding.add(key)
        params = self._params(node, key, loc)
        body_el = node.find("body")
        if body_el is None or len(body_el) == 0:
            raise UnsupportedError(f"{key} has no body", loc)
        body = self.expr(body_el[0], loc)
        level = int(node.findtext("level") or 0)
        name = node.findtext("uniquename") or key
        instanced = body_el[0].tag == "SubstInNode" and bool(body_el[0].findall("substs/Subst"))
        self.defs[key] = ir.OpDef(key, name, tuple(params), body, level, loc, instanced)
        self._decoding.discard(key)
        return self.defs[key]

    def _check_decodable(self, node: ET.Element, key: str, loc: ir.Loc) -> None:
        """Refuse a definition that is recursive or not an operator definition."""
        if key in self._decoding:
            raise UnsupportedError(f"recursive operator {key} is not supported", loc)
        if node.tag != "UserDefinedOpKind":
            raise UnsupportedError(f"{node.tag} {key} is not supported", loc)
        if node.find("recursive") is not None:
            raise UnsupportedError(f"RECURSIVE operator {key} is not supported", loc)

    def _params(self, node: ET.Element, key: str, loc: ir.Loc) -> list[ir.Ident]:
        """The parameters of definition `key` (refused where one is an operator)."""
        params = []
        for lp in node.findall("params/leibnizparam"):
            pnode = self._deref(lp[0])
            if (pnode.findtext("arity") or "0") != "0":
                raise UnsupportedError(f"higher-order parameter of {key}", loc)
            params.append(ir.Ident(pnode.findtext("uniquename") or "", _uid(lp[0])))
        return params

    def _def_key(self, uid: int) -> str:
        """`name` for a top-level definition of the spec; `name#uid` for one inlined where
        used (LET, `I!Op` of a named INSTANCE); `name#uid@n` inside the n-th INSTANCE."""
        node = self._entries[uid]
        name = node.findtext("uniquename") or ""
        if self._context:
            return f"{name}#{uid}{self._context}"
        return name if self._top.get(uid) == name and "!" not in name else f"{name}#{uid}"

    # -- expressions ----------------------------------------------------------------------

    def expr(self, el: ET.Element, outer: ir.Loc) -> ir.Expr:
        """Decode one expression element."""
        loc = self.loc(el, outer)
        level = int(el.findtext("level") or 0)
        decode = self._EXPRS.get(el.tag)
        if decode is None:
            what = {
                "DecimalNode": "decimal number",
                "OpArgNode": "operator argument (higher-order operator)",
            }
            raise UnsupportedError(f"{what.get(el.tag, el.tag)} is not supported", loc)
        return decode(self, el, loc, level)

    def _numeral(self, el: ET.Element, loc: ir.Loc, level: int) -> ir.Expr:
        return ir.Lit(loc, 0, int(el.findtext("IntValue") or 0))

    def _string(self, el: ET.Element, loc: ir.Loc, level: int) -> ir.Expr:
        return ir.Lit(loc, 0, el.findtext("StringValue") or "")

    def _let_in(self, el: ET.Element, loc: ir.Loc, level: int) -> ir.Expr:
        keys = tuple(self._let_def(ref) for ref in el.findall("opDefs/*"))
        body = self.expr(_only(el.find("body"), loc), loc)
        return ir.Let(loc, level, keys, body)

    def _at(self, el: ET.Element, loc: ir.Loc, level: int) -> ir.Expr:
        return ir.At(loc, level)

    def _labelled(self, el: ET.Element, loc: ir.Loc, level: int) -> ir.Expr:
        """`l:: e` names a subexpression (for proofs): it is `e`."""
        return self.expr(_only(el.find("body"), loc), loc)

    def _subst_in(self, el: ET.Element, loc: ir.Loc, level: int) -> ir.Expr:
        """`INSTANCE M WITH x <- e` applied to one of M's expressions: M's declarations are
        replaced by their values (decoded here), and M's definitions it uses are decoded
        again under that substitution, under keys of their own (nothing of M leaks out)."""
        subst: dict[int, ir.Expr] = {}
        for pair in el.findall("substs/Subst"):
            decl, value = pair[0], pair[len(pair) - 1]
            subst[_uid(decl)] = self.expr(value, loc)
        context = self._contexts.setdefault(
            tuple(sorted(subst.items(), key=lambda kv: kv[0])), f"@{len(self._contexts) + 1}"
        )
        saved = self._subst, self._context
        self._subst, self._context = subst, context
        try:
            return self.expr(_only(el.find("body"), loc), loc)
        finally:
            self._subst, self._context = saved

    def _let_def(self, ref: ET.Element) -> str:
        uid = _uid(ref)
        if ref.tag != "UserDefinedOpKindRef":
            raise UnsupportedError("only operator definitions are supported in LET", None)
        key = self._def_key(uid)
        self._decode_def(uid, key)
        return key

    def _opappl(self, el: ET.Element, loc: ir.Loc, level: int) -> ir.Expr:
        ref = el.find("operator")
        assert ref is not None and len(ref) == 1
        ref = ref[0]
        target = self._deref(ref)
        name = target.findtext("uniquename") or ""
        operands = el.find("operands")
        args_el = list(operands) if operands is not None else []
        if ref.tag == "OpDeclNodeRef":
            return self._declared(ref, target, name, loc, level)
        if ref.tag == "FormalParamNodeRef":
            if args_el:
                raise UnsupportedError(f"higher-order parameter {name}", loc)
            return ir.Param(loc, level, ir.Ident(name, _uid(ref)))
        if ref.tag == "UserDefinedOpKindRef":
            return self._user_op(ref, target, args_el, loc, level)
        if ref.tag == "BuiltInKindRef":
            return self._builtin(name, el, args_el, loc, level)
        raise UnsupportedError(f"operator reference {ref.tag}", loc)

    def _declared(
        self, ref: ET.Element, target: ET.Element, name: str, loc: ir.Loc, level: int
    ) -> ir.Expr:
        """A CONSTANT or VARIABLE (inside an INSTANCE: the value it is replaced by)."""
        if _uid(ref) in self._subst:
            return self._subst[_uid(ref)]
        kind = target.findtext("kind")
        if kind == "2":
            return ir.Const(loc, level, name)
        if kind == "3":
            return ir.Var(loc, level, name)
        raise UnsupportedError(f"declaration {name} of kind {kind}", loc)

    def _user_op(
        self,
        ref: ET.Element,
        target: ET.Element,
        args_el: list[ET.Element],
        loc: ir.Loc,
        level: int,
    ) -> ir.Expr:
        """An application of a defined operator: a cfg-given constant, a standard module's
        built-in, or a call of a definition (decoded here)."""
        name = target.findtext("uniquename") or ""
        if name in self._overridden and not args_el and self._overrides(ref, target):
            return ir.Const(loc, 0, name)
        args = tuple(self.expr(a, loc) for a in args_el)
        module = self._file_of(target)
        if module in STANDARD_MODULES:
            if name not in _STANDARD_OPS:
                raise UnsupportedError(f"operator {name} of module {module} is not supported", loc)
            return ir.Builtin(loc, level, _STANDARD_OPS[name], args)
        if target.find("recursive") is not None:
            raise UnsupportedError(f"RECURSIVE operator {name} is not supported", loc)
        key = self._def_key(_uid(ref))
        self._decode_def(_uid(ref), key)
        return ir.Call(loc, level, key, args)

    def _overrides(self, ref: ET.Element, target: ET.Element) -> bool:
        """Whether the cfg's value replaces this use: the spec's own top-level definition, or
        a standard module's operator (not a definition of an INSTANCEd module)."""
        if self._file_of(target) in STANDARD_MODULES:
            return True
        return self._top.get(_uid(ref)) == (target.findtext("uniquename") or "")

    def _builtin(
        self, name: str, el: ET.Element, args_el: list[ET.Element], loc: ir.Loc, level: int
    ) -> ir.Expr:
        if name in ("TRUE", "FALSE"):
            return ir.Lit(loc, 0, name == "TRUE")
        decode = self._BUILTINS.get(name)
        if decode is not None:
            return decode(self, name, el, args_el, loc, level)
        if name in _BUILTIN_OPS:
            args = tuple(self.expr(a, loc) for a in args_el)
            return ir.Builtin(loc, level, _BUILTIN_OPS[name], args)
        raise UnsupportedError(
            f"{_REFUSED.get(name, 'built-in operator ' + name)} is not supported", loc
        )

    def _prime(
        self, name: str, el: ET.Element, args_el: list[ET.Element], loc: ir.Loc, level: int
    ) -> ir.Expr:
        inner = self.expr(_only_list(args_el, loc), loc)
        if not isinstance(inner, ir.Var) or inner.primed:
            raise UnsupportedError("priming an expression other than a variable", loc)
        return ir.Var(loc, level, inner.name, primed=True)

    def _if(
        self, name: str, el: ET.Element, args_el: list[ET.Element], loc: ir.Loc, level: int
    ) -> ir.Expr:
        c, t, e = (self.expr(a, loc) for a in args_el)
        return ir.If(loc, level, c, t, e)

    def _record(
        self, name: str, el: ET.Element, args_el: list[ET.Element], loc: ir.Loc, level: int
    ) -> ir.Expr:
        fields = []
        for pair in args_el:
            key_el, val_el = self._pair(pair, loc)
            fields.append((key_el.findtext("StringValue") or "", self.expr(val_el, loc)))
        kind = "record" if name == "$RcdConstructor" else "records"
        return ir.Record(loc, level, kind, tuple(fields))

    def _quant(
        self, name: str, el: ET.Element, args_el: list[ET.Element], loc: ir.Loc, level: int
    ) -> ir.Expr:
        syms = el.find("boundSymbols")
        if syms is None or syms.find("unbound") is not None:
            raise UnsupportedError(
                f"{_REFUSED.get(name, 'unbounded ' + name)} is not supported", loc
            )
        bounds = []
        for b in syms.findall("bound"):
            idents = tuple(
                ir.Ident(self._deref(r).findtext("uniquename") or "", _uid(r))
                for r in b
                if r.tag == "FormalParamNodeRef"
            )
            dom = [c for c in b if c.tag not in ("FormalParamNodeRef", "tuple")]
            domain = self.expr(_only_list(dom, loc), loc)
            bounds.append(ir.Bound(idents, b.find("tuple") is not None, domain))
        kind = {
            "$FcnConstructor": "function",
            "$SubsetOf": "filter",
            "$SetOfAll": "map",
        }.get(name) or _QUANTS[name]
        body = self.expr(_only_list(args_el, loc), loc)
        return ir.Quant(loc, level, kind, tuple(bounds), body)

    def _case(
        self, name: str, el: ET.Element, args_el: list[ET.Element], loc: ir.Loc, level: int
    ) -> ir.Expr:
        arms: list[tuple[ir.Expr, ir.Expr]] = []
        other = None
        for pair in args_el:
            guard, value = self._pair(pair, loc)
            if guard.tag == "StringNode" and guard.text == "$Other":
                other = self.expr(value, loc)
            else:
                arms.append((self.expr(guard, loc), self.expr(value, loc)))
        return ir.Case(loc, level, tuple(arms), other)

    def _except(
        self, name: str, el: ET.Element, args_el: list[ET.Element], loc: ir.Loc, level: int
    ) -> ir.Expr:
        base = self.expr(args_el[0], loc)
        updates = []
        for pair in args_el[1:]:
            path_el, value_el = self._pair(pair, loc)
            path_ops = path_el.find("operands")
            path = tuple(self.expr(p, loc) for p in (path_ops if path_ops is not None else []))
            updates.append((path, self.expr(value_el, loc)))
        return ir.Except(loc, level, base, tuple(updates))

    def _pair(self, el: ET.Element, loc: ir.Loc) -> tuple[ET.Element, ET.Element]:
        """The two operands of a $Pair node."""
        ops = el.find("operands")
        if el.tag != "OpApplNode" or ops is None or len(ops) != 2:
            raise UnsupportedError("malformed $Pair in SANY output", self.loc(el, loc))
        return ops[0], ops[1]

    # -- helpers --------------------------------------------------------------------------

    def _deref(self, ref: ET.Element) -> ET.Element:
        return self._entries[_uid(ref)]

    def _file_of(self, node: ET.Element) -> str:
        return node.findtext("location/filename") or ""

    def loc(self, el: ET.Element, outer: ir.Loc | None = None) -> ir.Loc:
        """The element's location (the enclosing one when SANY gives none)."""
        loc_el = el.find("location")
        if loc_el is None:
            return outer or ir.Loc(self.display, 0, 0)
        module = loc_el.findtext("filename") or ""
        file = self.display if module == self.name else f"{self._dir}{module}.tla"
        line = int(loc_el.findtext("line/begin") or 0)
        return ir.Loc(file, line, int(loc_el.findtext("column/begin") or 0))

    # Expression elements by tag: (index, element, location, level) -> IR.
    _EXPRS: ClassVar[dict[str, Callable[[ModuleIndex, ET.Element, ir.Loc, int], ir.Expr]]] = {
        "NumeralNode": _numeral,
        "StringNode": _string,
        "OpApplNode": _opappl,
        "LetInNode": _let_in,
        "AtNode": _at,
        "SubstInNode": _subst_in,
        "LabelNode": _labelled,
    }
    # Built-in operators with a form of their own (the rest are plain ir.Builtin calls).
    _BUILTINS: ClassVar[
        dict[
            str,
            Callable[[ModuleIndex, str, ET.Element, list[ET.Element], ir.Loc, int], ir.Expr],
        ]
    ] = {
        "'": _prime,
        "$IfThenElse": _if,
        "$Case": _case,
        "$Except": _except,
        "$RcdConstructor": _record,
        "$SetOfRcds": _record,
        **dict.fromkeys((*_QUANTS, "$FcnConstructor", "$SubsetOf", "$SetOfAll"), _quant),
    }


def _uid(ref: ET.Element) -> int:
    return int(ref.findtext("UID") or -1)


def _loc_key(item: tuple[ir.Loc, str]) -> tuple[str, int, int, str]:
    loc, name = item
    return (loc.file, loc.line, loc.col, name)


def _only(el: ET.Element | None, loc: ir.Loc) -> ET.Element:
    if el is None or len(el) != 1:
        raise UnsupportedError("unexpected SANY output shape", loc)
    return el[0]


def _only_list(els: Iterable[ET.Element], loc: ir.Loc) -> ET.Element:
    items = list(els)
    if len(items) != 1:
        raise UnsupportedError("unexpected SANY output shape", loc)
    return items[0]
