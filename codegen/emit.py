"""Emitter: the Spec IR → the text of each generated module (jinja2 templates, unformatted)."""

from __future__ import annotations

import enum
import io
import keyword
import textwrap
import tokenize
from typing import Any

import jinja2

from aegis.values import Fn, ModelValue, Value, sorted_values
from codegen import ir
from codegen.errors import CodegenError
from codegen.pyenv import RESERVED, Env, Scope, lit, py_name
from codegen.pyexpr import ExprCompiler
from codegen.pystmt import StepCompiler

HEADER = "# Generated from {spec} by codegen — do not edit."
_VALUES = ("Fn", "ModelValue", "Value", "apply", "domain", "except_", "fn")
_STATE_METHODS = frozenset({"as_dict", "from_dict"})
_LABEL_TAKEN = frozenset({*dir(enum.StrEnum), "mro"})  # str methods and the like

_jinja = jinja2.Environment(
    loader=jinja2.PackageLoader("codegen", "templates"),
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,
    autoescape=False,
)
_jinja.filters["strings"] = lambda names: py_value(tuple(names))
_jinja.filters["labels"] = lambda names: label_tuple(tuple(names))


def emit(spec: ir.Spec, *, incremental: bool = True) -> dict[str, str]:
    """Generated file name → Python source (before formatting).

    `incremental` (the default, what the runtime and conformance run) emits quantifiers over
    constant sets as sites kept current per state and actions that bind observed choices;
    without it, every quantifier is evaluated from scratch and every choice enumerated (the
    straightforward reference the differential tests compare with)."""
    return _Emitter(spec, incremental=incremental).files()


class _Emitter:
    """Holds what the templates share: names, the expression compiler, the header."""

    def __init__(self, spec: ir.Spec, *, incremental: bool = True) -> None:
        self.spec = spec
        self.module = spec.module
        self.incremental = incremental
        self.exprs = ExprCompiler(spec.module, incremental=incremental)
        self.def_names = {py_name(d.name) for d in self._defs()}
        self.common = {
            "header": HEADER.format(spec=self.module.path),
            "name": self.module.name,
            "spec_path": self.module.path,
            "cfg_path": spec.config.where,
        }
        _check_identifiers(self.module)
        _check_labels(self.spec)

    def files(self) -> dict[str, str]:
        out = {
            "__init__.py": self.render("init.py.j2", **self.init_context()),
            "_tla.py": self.render("tla.py.j2"),
            "model.py": self.render("model.py.j2", **self.model_context()),
            "defs.py": self.render("defs.py.j2", **self.defs_context()),
            "actions.py": self.render("actions.py.j2", **self.actions_context()),
            "invariants.py": self.render("invariants.py.j2", **self.invariants_context()),
        }
        if self.spec.phase is not None:
            out["phases.py"] = self.render("phases.py.j2", **self.phases_context(self.spec.phase))
        return out

    def render(self, template: str, **context: Any) -> str:
        return _jinja.get_template(template).render(**self.common, **context)

    # -- contexts -------------------------------------------------------------------------

    def init_context(self) -> dict[str, Any]:
        exports = ["ACTIONS", "PROCESSES", "commit", "initial_states", "next_states"]
        exports += ["CONSTRAINTS", "INVARIANTS", "PROPERTIES", "violated_invariants"]
        exports += ["within_constraints", "CFG_CONSTANTS", "CONSTANT_NAMES", "VARIABLES"]
        exports += ["ActionInfo", "Constants", "Label", "State", "Successor", "defs"]
        if self.spec.phase is not None:
            exports += ["INITIAL_PHASE", "PHASE_TRANSITIONS", "PHASE_VARIABLE", "PHASES"]
            exports += ["PhaseMachine"]
        exports += ["SPEC_MODULE", "SPEC_PATH", "CFG_PATH"]
        return {"has_phases": self.spec.phase is not None, "exports": sorted(exports, key=_isort)}

    def model_context(self) -> dict[str, Any]:
        values = self.spec.constants
        consts = self.module.constants
        given = all(k in values for k in consts)
        cfg_constants = None
        if given:
            args = ", ".join(f"{k}={py_value(values[k])}" for k in consts)
            cfg_constants = f"Constants({args})"
        uses_mv = given and "ModelValue(" in (cfg_constants or "")
        return {
            "labels": [{"label": a.label, "source": a.loc.file} for a in self.spec.actions],
            "variables": [self.decl(v) for v in self.module.variables],
            "constants": [self.decl(k) for k in consts],
            "cfg_constants": cfg_constants,
            "values_imports": "ModelValue, Value" if uses_mv else "Value",
        }

    def decl(self, name: str) -> dict[str, str]:
        loc = self.module.declared.get(name)
        return {"name": name, "source": loc.file if loc else self.module.path}

    def defs_context(self) -> dict[str, Any]:
        defs = [self.definition(d) for d in self._defs()]
        sites = self.sites()
        used = _names(*(d["body"] for d in defs), *(s["text"] for s in sites))
        if any(d["cached"] for d in defs):
            used.add("_tla")
        return {
            "defs": defs,
            "sites": sites,
            "values_imports": _values_imports(used),
            "uses_tla": "_tla" in used,
            "uses_state": any(d.level for d in self._defs()),
        }

    def definition(self, d: ir.OpDef) -> dict[str, Any]:
        """One definition as a generated function: name, signature, body and doc."""
        self.exprs.anchor = d.name
        scope = self.scope()
        env = Env(self.module, scope, state="s" if d.level else None)
        params = ["c: Constants"] + (["s: State"] if d.level else [])
        for ident in d.params:
            name = scope.fresh(ident.name)
            env = env.bind(ident, name)
            params.append(f"{name}: Value")
        sig = d.name + (f"({', '.join(p.name for p in d.params)})" if d.params else "")
        return {
            "name": py_name(d.name),
            "signature": ", ".join(params),
            "body": self.exprs.compile(d.body, env).text,
            "doc": f"{sig} ({d.loc.file}).",
            # a state's value of a 0-ary definition is kept on the state (its value
            # never changes: states are immutable), asked again by every guard
            "cached": self.incremental and d.level == ir.STATE_LEVEL and not d.params,
        }

    def actions_context(self) -> dict[str, Any]:
        init_body = _indent(self.init_lines())
        actions = [self.action(a) for a in self.spec.actions]
        sites = self.sites()
        used = _names(init_body, *(a["body"] for a in actions), *(a["ids"] for a in actions))
        used |= _names(*(s["text"] for s in sites))
        return {
            "init_body": init_body,
            "init_source": self.source(self._init_loc()),
            "actions": actions,
            "sites": sites,
            "processes": self.processes(),
            "values_imports": _values_imports(used),
            "defs_imports": ", ".join(sorted(self.def_names & used, key=_import_order)),
        }

    def init_lines(self) -> list[str]:
        """The body of the generated Init (the initial states, one per yield)."""
        self.exprs.anchor = "Init"
        init_env = Env(self.module, self.scope(), state=None, init_mode=True)
        return StepCompiler(self.module, self.exprs, init_mode=True).body(
            self.spec.init, init_env, self._init_loc(), "Init"
        )

    def processes(self) -> list[dict[str, Any]]:
        """Each process (None: the actions of no process) with its labels, in action order."""
        labels: dict[str | None, list[str]] = {}
        for a in self.spec.actions:
            labels.setdefault(a.process, []).append(a.label)
        return [
            {"name": lit(p) if p is not None else "None", "labels": names}
            for p, names in labels.items()
        ]

    def action(self, a: ir.Action) -> dict[str, str]:
        self.exprs.anchor = a.label
        scope = self.scope()
        scope.taken.add("self")
        scope.taken.add("bind")
        env = Env(self.module, scope)
        if a.self_param is not None:
            env = env.bind(a.self_param, "self")
        steps = StepCompiler(self.module, self.exprs, init_mode=False, bind=self.incremental)
        lines = steps.body(a.body, env, a.loc, a.label)
        ids, kind, doc = self.process_ids(a)
        return {
            "label": a.label,
            "signature": f"{a.label}(self)" if a.self_param else a.label,
            "process": lit(a.process) if a.process is not None else "None",
            "process_doc": doc,
            "kind": kind,
            "ids": ids,
            "body": _indent(lines),
            "source": a.loc.file,
        }

    def process_ids(self, a: ir.Action) -> tuple[str, str, str]:
        """The ids of the process `a` belongs to (Python text), its kind and a doc line."""
        process = next((p for p in self.spec.processes if a.label in p.labels), None)
        if process is None or process.ids is None:
            return "frozenset({None})", "none", "no process: id None"
        ids = self.exprs.compile(process.ids, Env(self.module, self.scope(), state=None)).text
        if process.kind == "set":
            return f"frozenset({ids})", "set", f"process set {process.name}"
        return f"frozenset({{{ids}}})", "single", f"process {process.name}"

    def invariants_context(self) -> dict[str, Any]:
        preds = []
        for kind, names in (("inv", self.spec.invariants), ("constraint", self.spec.constraints)):
            for name in names:
                d = self.module.defs[name]
                call = f"{py_name(name)}(c, s)" if d.level else f"{py_name(name)}(c)"
                func = ("inv_" if kind == "inv" else "constraint_") + name
                reads = self.exprs.var_reads(name)
                preds.append(
                    {
                        "kind": kind,
                        "name": name,
                        "func": func,
                        "call": call,
                        "source": self.source(d.loc),
                        # the variables it reads (None: not known, re-checked after any step)
                        "reads": "None" if reads is None else _frozenset_literal(sorted(reads)),
                    }
                )
        used = sorted({py_name(p["name"]) for p in preds}, key=_import_order)
        return {
            "predicates": preds,
            "properties": self.spec.properties,
            "defs_imports": ", ".join(used),
        }

    def phases_context(self, pm: ir.PhaseMachine) -> dict[str, Any]:
        attrs = _phase_attrs(pm.states)
        sources = {src for _, src, _ in pm.transitions}
        phases = [
            {
                "attr": attrs[v],
                "name": lit(render_phase(v)),
                "value": py_value(v),
                "initial": v == pm.initial,
                "final": v not in sources,
            }
            for v in pm.states
        ]
        ev = _phase_events(pm, attrs)
        all_str = all(isinstance(v, str) for v in pm.states)
        return {
            "variable": pm.variable,
            "phases": phases,
            "phases_tuple": py_value(pm.states),
            "initial": py_value(pm.initial),
            "transitions": [
                {"label": lbl, "source": py_value(s), "target": py_value(t)}
                for lbl, s, t in pm.transitions
            ],
            "events": ev,
            "guarded": any(e["guarded"] for e in ev),
            "value_type": "str" if all_str else "Value",
            "values_imports": "" if all_str else "ModelValue, Value",
        }

    # -- helpers --------------------------------------------------------------------------

    def _defs(self) -> list[ir.OpDef]:
        """Top-level definitions emitted as functions (state or constant level)."""
        return [
            d for key, d in self.module.defs.items() if "#" not in key and d.level <= ir.STATE_LEVEL
        ]

    def _init_loc(self) -> ir.Loc:
        return getattr(self.spec.init, "loc", ir.Loc(self.module.path, 0, 0))

    def scope(self) -> Scope:
        return Scope(taken=set(RESERVED) | self.def_names)

    def source(self, loc: ir.Loc) -> str:
        """Where generated code came from: the spec file (the names say what; no line
        numbers, so that moving lines in the spec does not change the generated code)."""
        return loc.file

    def sites(self) -> list[dict[str, str]]:
        """The module-level `_tla.Site` constants of the sites compiled since the last call."""
        return [
            {
                "name": s.const,
                "text": f"_tla.Site({lit(s.anchor)}, {py_value(s.keyed)}, {py_value(s.reads)}"
                + (", by_value=True)" if s.by_value else ")"),
            }
            for s in self.exprs.take_sites()
        ]


def _check_identifiers(module: ir.Module) -> None:
    """Variables and constants become Python attribute names: they must be usable as such."""
    for name in (*module.variables, *module.constants):
        if not name.isidentifier() or keyword.iskeyword(name) or name in _STATE_METHODS:
            why = "a Python keyword" if keyword.iskeyword(name) else "taken by the State class"
            where = module.declared.get(name)
            raise CodegenError(
                f"{'' if where else module.path + ': '}rename {name}: it cannot be a Python "
                f"attribute ({why if name.isidentifier() else 'not an identifier'})",
                where,
            )


def _check_labels(spec: ir.Spec) -> None:
    """Labels become members of the generated `Label` StrEnum: each must be usable as one."""
    for a in spec.actions:
        name = a.label
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
            raise CodegenError(f"rename label {name}: it cannot be a Python name", a.loc)
        if name in _LABEL_TAKEN:
            raise CodegenError(
                f"rename label {name}: the generated Label enum (a str) already has an "
                f"attribute {name}",
                a.loc,
            )


def _isort(name: str) -> tuple[int, str]:
    """RUF022's order for __all__: CONSTANTS, then Classes, then functions."""
    group = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return group, name


def _import_order(name: str) -> tuple[int, str, str]:
    """isort's order for names in one `from ... import`: CONSTANTS, Classes, functions, each
    group case-insensitively (EvictAtCheckpoint, EvictionAffordable, EvictOnlySlow)."""
    group = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return group, name.lower(), name


def _phase_attrs(states: tuple[Value, ...]) -> dict[Value, str]:
    attrs: dict[Value, str] = {}
    for i, v in enumerate(states):
        text = render_phase(v)
        ok = text.isidentifier() and not keyword.iskeyword(text) and text not in attrs.values()
        attrs[v] = text if ok and text not in ("is_observed",) else f"phase_{i}"
    return attrs


def render_phase(v: Value) -> str:
    """A phase value as a name: the string itself, or the model value's name."""
    return v.name if isinstance(v, ModelValue) else str(v)


def _phase_events(pm: ir.PhaseMachine, attrs: dict[Value, str]) -> list[dict[str, Any]]:
    """Each action label's phase transitions; guarded: some source phase has two targets."""
    events: dict[str, list[tuple[Value, Value]]] = {}
    for label, src, dst in pm.transitions:
        events.setdefault(label, []).append((src, dst))
    taken = set(attrs.values()) | {"is_observed"}
    return [
        {
            "label": label,
            "attr": label if label not in taken else f"{label}_",
            "guarded": len({s for s, _ in pairs}) < len(pairs),
            "transitions": [{"source": attrs[s], "target": attrs[t]} for s, t in pairs],
        }
        for label, pairs in events.items()
    ]


def _values_imports(used: set[str]) -> str:
    """The aegis.values names a generated module imports: those it uses, and Value."""
    return ", ".join(n for n in _VALUES if n in used or n == "Value")


def py_value(v: Value) -> str:
    """A value as a Python expression over aegis.values."""
    if isinstance(v, bool | int):
        return repr(v)
    if isinstance(v, str):
        return lit(v)
    if isinstance(v, ModelValue):
        return f'ModelValue("{v.name}")'
    return _collection_value(v)


def _collection_value(v: Value) -> str:
    """A set, tuple or function value as a Python expression over aegis.values."""
    if isinstance(v, frozenset):
        items = ", ".join(py_value(x) for x in sorted_values(v))
        return f"frozenset({{{items}}})" if v else "frozenset()"
    if isinstance(v, tuple):
        parts = [py_value(x) for x in v]
        return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
    if isinstance(v, Fn):
        items = ", ".join(f"{py_value(k)}: {py_value(v[k])}" for k in sorted_values(v))
        return f"Fn({{{items}}})"
    raise TypeError(f"not a TLA+ value: {v!r}")


def label_tuple(labels: tuple[str, ...]) -> str:
    """A tuple of labels as a Python expression over the generated Label enum."""
    parts = [f"Label.{x}" for x in labels]
    return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"


def _frozenset_literal(names: list[str]) -> str:
    """`frozenset({"a", "b"})` (sorted: the output does not depend on the hash seed)."""
    return f"frozenset({{{', '.join(repr(n) for n in names)}}})" if names else "frozenset()"


def _indent(lines: list[str]) -> str:
    return "\n".join("    " + ln if ln else ln for ln in lines)


def _names(*fragments: str) -> set[str]:
    """The Python names used in fragments of generated code."""
    names = set()
    for text in fragments:
        for tok in tokenize.generate_tokens(io.StringIO(textwrap.dedent(text)).readline):
            if tok.type == tokenize.NAME:
                names.add(tok.string)
    return names
