"""`aegis ctl`'s tables: the status view of a job and the results of health checks, as text.

Every line of the status fits WIDTH columns: long faults and reasons are cut with '…', and
when pod or node names leave no room for the last fault as a column, it goes on a line of its
own under its pod.
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Mapping, Sequence
from typing import Any

from aegis.cli.ctl_config import CtlConfig
from aegis.cli.ctl_saved import json_object, saved_head

TERMINAL = ("Succeed", "Failed")
WIDTH = 100  # the human status fits this many columns
MIN_FAULT_COLUMN = 30
# FAILED: the failures counted against the pod; the spec's per-pod retries (--json) are
# aligned to the job's count at each restart, so every pod would show the job's number
POD_HEADER = ["POD", "NODE", "PHASE", "FAILED", "FLAGS", "FAULT AT"]


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns two spaces apart, a header on top."""
    cells = [list(header), *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(line.rstrip() for line in lines)


def _fit(cells: list[list[str]], col: int, width: int) -> None:
    """Shorten column `col` of every row (with '…') so that the table fits `width`."""
    others = sum(max(len(r[i]) for r in cells) for i in range(len(cells[0])) if i != col)
    room = max(width - others - 2 * (len(cells[0]) - 1), 8)
    for r in cells:
        if len(r[col]) > room:
            r[col] = r[col][: room - 1] + "…"


def _fitted_table(header: Sequence[str], rows: Sequence[Sequence[object]], col: int) -> str:
    cells = [list(header), *[[str(c) for c in r] for r in rows]]
    _fit(cells, col, WIDTH)
    return table(cells[0], cells[1:])


def _wrapped(line: str) -> list[str]:
    return textwrap.wrap(line, WIDTH, subsequent_indent="  ")


def _flags(i: Mapping[str, Any]) -> str:
    out = [name for name in ("finished", "slow", "evict") if i.get(name) is True]
    state = i.get("agentState")
    if isinstance(state, str) and state not in ("Ready", "Working", ""):
        out.append(state.lower())
    return ",".join(out) or "-"


def _ago(t: object, now: float) -> str:
    if not isinstance(t, int | float) or isinstance(t, bool) or t <= 0:
        return "-"
    secs = max(now - float(t), 0.0)
    if secs < 120:
        return f"{secs:.0f}s ago"
    if secs < 7200:
        return f"{secs / 60:.0f}m ago"
    if secs < 172800:
        return f"{secs / 3600:.0f}h ago"
    return time.strftime("%Y-%m-%d", time.localtime(float(t)))


def _when(t: object) -> str:
    if isinstance(t, int | float) and not isinstance(t, bool):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
    return "-"


def _head(cfg: CtlConfig, v: Mapping[str, Any]) -> list[str]:
    """The first line(s): phase and retries, or how a saved (not running) job ended."""
    if v.get("saved"):
        return [w for line in saved_head(v) for w in _wrapped(line)]
    used, top = v.get("recoverCount", "?"), v.get("maxRetry", "?")
    if isinstance(used, int) and isinstance(top, int):
        used = min(used, top)  # a failed job's wrap-up sets it to MaxRetry + 1
    head = f"job {cfg.namespace}/{cfg.job}: {v.get('phase', '?')}, retries {used}/{top}"
    if v.get("shouldQuit") and v.get("phase") not in TERMINAL:
        head += ", stopping (shouldQuit)"
    return [head[:WIDTH]]


def _pod_rows(v: Mapping[str, Any], now: float) -> tuple[list[list[object]], list[str]]:
    """Each pod's row under POD_HEADER, and its last fault's message ('-': none)."""
    rows: list[list[object]] = []
    messages = []
    for pod, info in sorted(json_object(v.get("pods")).items()):
        i = json_object(info)
        fault = json_object(i.get("lastFault"))
        messages.append(str(fault.get("message") or i.get("lastFailedReason") or "-"))
        rows.append(
            [
                pod,
                i.get("node") or "-",
                i.get("innerPhase", "-"),
                i.get("failures", "-"),
                _flags(i),
                _ago(fault.get("time"), now),
            ]
        )
    return rows, messages


def _pod_table(rows: list[list[object]], messages: list[str]) -> list[str]:
    """The pods' table, with the last fault as its last column when that column has room."""
    cells = [POD_HEADER, *[[str(c) for c in r] for r in rows]]
    width = sum(max(len(r[k]) for r in cells) + 2 for k in range(len(POD_HEADER)))
    if WIDTH - width >= MIN_FAULT_COLUMN:  # the last fault fits as a column
        table_rows = [[*r, m] for r, m in zip(rows, messages, strict=True)]
        return [_fitted_table([*POD_HEADER, "LAST FAULT"], table_rows, len(POD_HEADER))]
    # long pod or node names: each pod's last fault on a line of its own below it
    lines = table(POD_HEADER, rows).split("\n")
    out = [lines[0]]
    for line, message in zip(lines[1:], messages, strict=True):
        out.append(line)
        if message != "-":
            text = f"  last fault: {message}"
            out.append(text if len(text) <= WIDTH else text[: WIDTH - 1] + "…")
    return out


def _summary_lines(v: Mapping[str, Any]) -> list[str]:
    """A large job lists only the pods with something to see: how many, and the rest by phase."""
    summary = json_object(v.get("podSummary"))
    if not summary:
        return []
    counts = json_object(summary.get("byPhase"))
    return _wrapped(
        f"{summary.get('shown', '?')} of {summary.get('total', '?')} pods listed "
        f"({summary.get('notable', '?')} with a fault, retries, a mark or another phase); "
        "by phase: " + ", ".join(f"{k} {counts[k]}" for k in sorted(counts))
    )


def _error_node_lines(v: Mapping[str, Any]) -> list[str]:
    nodes = [json_object(n) for n in v.get("errorNodes") or []]
    if not nodes:
        return ["error nodes: none"]
    node_rows = [[n.get("node", "?"), _when(n.get("time")), n.get("reason", "")] for n in nodes]
    return ["error nodes:", _fitted_table(["NODE", "SINCE", "REASON"], node_rows, 2)]


def _save_lines(v: Mapping[str, Any]) -> list[str]:
    """The status store's failed saves, if any."""
    saves = json_object(v.get("persistence"))
    if not saves.get("failures"):
        return []
    state = "ok again" if saves.get("ok") else "FAILING"
    when = _when(saves.get("lastFailed"))
    line = f"status saves: {state}, {saves['failures']} failed, last {when}: "
    return _wrapped(line + str(saves.get("lastError", "")))


def _counter_lines(v: Mapping[str, Any]) -> list[str]:
    counters = json_object(v.get("counters"))
    if not counters:
        return []
    return _wrapped("counters: " + ", ".join(f"{k}={counters[k]}" for k in sorted(counters)))


def render_status(cfg: CtlConfig, view: Any, now: float | None = None) -> str:
    """The status view: a head line, a table of pods (node, inner phase, failures counted,
    flags, last fault and when) and the error nodes with their reasons; every line fits WIDTH
    columns. A saved view (`saved_view`: the job is not running) says how it ended first."""
    now = time.time() if now is None else now
    v = json_object(view)
    rows, messages = _pod_rows(v, now)
    return "\n".join(
        [
            *_head(cfg, v),
            *_pod_table(rows, messages),
            *_summary_lines(v),
            *_error_node_lines(v),
            *_save_lines(v),
            *_counter_lines(v),
        ]
    )


def _check_row(pod: str, r: Any) -> list[object]:
    d = json_object(r)
    verdict = "n/a" if d.get("applicable") is False else "PASS" if d.get("passed") else "FAIL"
    secs = d.get("duration_s")
    return [
        pod,
        d.get("check_type", "?"),
        verdict,
        f"{secs:.3f}" if isinstance(secs, int | float) else "-",
        d.get("result", ""),
    ]


def render_checks(results: Sequence[tuple[str, Any]]) -> str:
    """Check results of each pod as one table."""
    rows = [
        _check_row(pod, r)
        for pod, result in results
        for r in (result if isinstance(result, list) else [])
    ]
    return table(["POD", "CHECK", "RESULT", "SECONDS", "DETAIL"], rows)
