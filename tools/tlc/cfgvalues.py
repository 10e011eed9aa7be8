"""Constant values of a cfg that TLC 2.15 itself refuses, found before anything is generated.

TLC 2.15's cfg reader takes a constant's value only in a small grammar: a natural number
(32-bit), a string, TRUE or FALSE, a model value (a name), or a set `{...}` of those (sets
nested); it refuses a tuple, a record, a range, a negative number or any expression, and
it fails on a set that mixes kinds it cannot compare. A value in that grammar is taken at
once; any other is shown to TLC itself, in a throw-away model of its own, so that the verdict
and the words are TLC's (`aegis spec gen` then refuses the cfg, as TLC would).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from aegis.errors import SpecError
from tools.tlc.cfg import TlcConfig

_TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|[0-9]+(?![A-Za-z_])|[A-Za-z0-9_]+|[{},]|\S)')
_NAME = re.compile(r"[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*")
_INT_MAX = 2**31 - 1
_PROBE = "AegisCfgValueProbe"


def check_values(config: TlcConfig) -> None:
    """SpecError, at the cfg line, for the first constant value TLC refuses."""
    for name, text in config.constants.items():
        if plain_kind(text) is None:
            refusal = tlc_refusal(name, text)
            if refusal is not None:
                raise SpecError(f"{config.at(name)}: TLC refuses the value of {name}: {refusal}")


def plain_kind(text: str) -> str | None:
    """The kind of a value in the grammar TLC takes (int, str, bool, model, set); None if
    the value is outside it, or a set mixes kinds."""
    tokens = [m.group(1) for m in _TOKEN.finditer(text)]
    kind, end = _value(tokens, 0)
    return kind if end == len(tokens) else None


def _value(tokens: list[str], i: int) -> tuple[str | None, int]:
    if i >= len(tokens):
        return None, i
    tok = tokens[i]
    if tok == "{":
        return _set(tokens, i + 1)
    if tok.startswith('"'):
        return "str", i + 1
    if tok.isdigit():
        return ("int" if int(tok) <= _INT_MAX else None), i + 1
    if tok in ("TRUE", "FALSE"):
        return "bool", i + 1
    if _NAME.fullmatch(tok):
        return "model", i + 1
    return None, i


def _set(tokens: list[str], i: int) -> tuple[str | None, int]:
    """After `{`: elements of one kind, then `}`."""
    kinds: set[str | None] = set()
    if i < len(tokens) and tokens[i] == "}":
        return "set", i + 1
    while True:
        kind, i = _value(tokens, i)
        kinds.add(kind)
        if i < len(tokens) and tokens[i] == ",":
            i += 1
            continue
        break
    if None in kinds or len(kinds) != 1 or i >= len(tokens) or tokens[i] != "}":
        return None, i
    return "set", i + 1


def tlc_refusal(name: str, text: str) -> str | None:
    """TLC's own words if it refuses `name = text` in a cfg (None if it takes it)."""
    from tools.tlc.runner import run_tlc  # the runner reads cfgs with tools.tlc.cfg

    module = "\n".join(
        [
            f"---- MODULE {_PROBE} ----",
            f"CONSTANT {name}",
            "VARIABLE aegisCfgProbe",
            "AegisCfgInit == aegisCfgProbe = 0",
            "AegisCfgNext == UNCHANGED aegisCfgProbe",
            "====",
        ]
    )
    cfg = f"CONSTANT {name} = {text}\nINIT AegisCfgInit\nNEXT AegisCfgNext\n"
    with tempfile.TemporaryDirectory(prefix="aegis-cfg-value-") as tmp:
        spec = Path(tmp) / f"{_PROBE}.tla"
        spec.write_text(module + "\n", encoding="utf-8")
        (Path(tmp) / f"{_PROBE}.cfg").write_text(cfg, encoding="utf-8")
        try:
            result = run_tlc(spec, workers=1)
        except SpecError as exc:
            return _strip_location(str(exc))
    if result.ok:
        return None
    said = result.errors or ([result.violation.message] if result.violation else [])
    return _strip_location(" ".join(said)) or f"TLC exits {result.exit_code}"


def _strip_location(message: str) -> str:
    """TLC's message without the probe cfg's `file:line: ` (the caller names the cfg line)."""
    return re.sub(r"^\S*AegisCfgValueProbe\.cfg(?::\d+)?:\s*", "", message.strip())
