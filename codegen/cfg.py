"""Read a TLC model config (.cfg): the clause names and the constants' values."""

from __future__ import annotations

from pathlib import Path

from aegis.values import ModelValue, Value
from codegen.errors import CodegenError
from codegen.ir import Config

_SINGLE = {"INIT": "init", "NEXT": "next", "SPECIFICATION": "specification", "SYMMETRY": "symmetry"}
_LISTS = {
    "INVARIANT": "invariants",
    "INVARIANTS": "invariants",
    "PROPERTY": "properties",
    "PROPERTIES": "properties",
    "CONSTRAINT": "constraints",
    "CONSTRAINTS": "constraints",
    "ACTION_CONSTRAINT": "action_constraints",
    "ACTION_CONSTRAINTS": "action_constraints",
}
_IGNORED = {"VIEW", "CHECK_DEADLOCK", "POSTCONDITION", "ALIAS"}
_KEYWORDS = {"CONSTANT", "CONSTANTS", *_SINGLE, *_LISTS, *_IGNORED}
_PUNCT = ("<-", "<<", ">>", "{", "}", ",", "=", "-")


def read_config(path: Path, display: str) -> Config:
    """Parse the .cfg at `path` (shown to users as `display`)."""
    if not path.is_file():
        raise CodegenError(f"{display}: no such model config")
    return _Parser(_tokens(path.read_text(encoding="utf-8"), display), display).config()


def _tokens(text: str, display: str) -> list[tuple[str, int]]:
    """Tokens with their line numbers; comments \\* ... and (* ... *) dropped."""
    out: list[tuple[str, int]] = []
    i, line, n = 0, 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch.isspace():
            i += 1
        elif text.startswith("\\*", i):
            i = text.find("\n", i) if "\n" in text[i:] else n
        elif text.startswith("(*", i):
            end = text.find("*)", i)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
        elif ch == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append((text[i : end + 1], line))
            i = end + 1
        elif ch.isalnum() or ch == "_":
            end = i
            while end < n and (text[end].isalnum() or text[end] == "_"):
                end += 1
            out.append((text[i:end], line))
            i = end
        else:
            punct = next((p for p in _PUNCT if text.startswith(p, i)), None)
            if punct is None:
                raise CodegenError(f"{display}:{line}: unexpected character {ch!r}")
            out.append((punct, line))
            i += len(punct)
    return out


class _Parser:
    """Recursive-descent reader of the token list."""

    def __init__(self, tokens: list[tuple[str, int]], display: str) -> None:
        self.toks = tokens
        self.pos = 0
        self.display = display
        self.fields: dict[str, str] = {}
        self.lists: dict[str, list[str]] = {v: [] for v in _LISTS.values()}
        self.constants: dict[str, Value] = {}
        self.substitutions: dict[str, str] = {}

    def config(self) -> Config:
        while self.pos < len(self.toks):
            word, line = self.next()
            if word in ("CONSTANT", "CONSTANTS"):
                self.constant_block()
            elif word in _SINGLE:
                self.fields[_SINGLE[word]] = self.name()
            elif word in _LISTS:
                self.lists[_LISTS[word]].extend(self.names())
            elif word in _IGNORED:
                self.names()
            else:
                raise CodegenError(f"{self.display}:{line}: unexpected {word!r}")
        return Config(
            path=self.display,
            constants=self.constants,
            substitutions=self.substitutions,
            init=self.fields.get("init"),
            next=self.fields.get("next"),
            specification=self.fields.get("specification"),
            invariants=tuple(self.lists["invariants"]),
            properties=tuple(self.lists["properties"]),
            constraints=tuple(self.lists["constraints"]),
            action_constraints=tuple(self.lists["action_constraints"]),
            symmetry=self.fields.get("symmetry"),
        )

    def constant_block(self) -> None:
        while self.peek() not in _KEYWORDS and self.pos < len(self.toks):
            name = self.name()
            op, line = self.next()
            if op == "=":
                self.constants[name] = self.value()
            elif op == "<-":
                self.substitutions[name] = self.name()
            else:
                raise CodegenError(f"{self.display}:{line}: expected = or <- after {name}")

    def value(self) -> Value:
        tok, line = self.next()
        if tok == "{":
            return frozenset(self.items("}"))
        if tok == "<<":
            return tuple(self.items(">>"))
        if tok == "-":
            return -int(self.next()[0])
        if tok.startswith('"'):
            return tok[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        if tok.isdigit():
            return int(tok)
        if tok in ("TRUE", "FALSE"):
            return tok == "TRUE"
        if tok[0].isalnum() or tok[0] == "_":
            return ModelValue(tok)
        raise CodegenError(f"{self.display}:{line}: unexpected {tok!r} in a constant value")

    def items(self, close: str) -> list[Value]:
        out: list[Value] = []
        while self.peek() != close:
            out.append(self.value())
            if self.peek() == ",":
                self.next()
        self.next()
        return out

    def names(self) -> list[str]:
        out = []
        while self.pos < len(self.toks) and self.peek() not in _KEYWORDS:
            out.append(self.name())
        return out

    def name(self) -> str:
        tok, line = self.next()
        if not (tok[0].isalnum() or tok[0] == "_") or tok in _KEYWORDS:
            raise CodegenError(f"{self.display}:{line}: expected a name, found {tok!r}")
        return tok

    def peek(self) -> str:
        return self.toks[self.pos][0] if self.pos < len(self.toks) else ""

    def next(self) -> tuple[str, int]:
        if self.pos >= len(self.toks):
            raise CodegenError(f"{self.display}: unexpected end of file")
        tok = self.toks[self.pos]
        self.pos += 1
        return tok
