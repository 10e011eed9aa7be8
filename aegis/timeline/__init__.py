"""`aegis timeline`: a picture of a run (one row per pod, phases over time, fault markers)."""

from __future__ import annotations

import sys
from pathlib import Path

from aegis.timeline.model import Timeline, TimelineError, load

__all__ = ["Timeline", "TimelineError", "load", "write", "write_run_timeline"]

FORMATS = (".html", ".png", ".svg")


def write(tl: Timeline, out: Path) -> Path:
    """Write `tl` to `out`; the format is the suffix (.html, .png, .svg)."""
    suffix = out.suffix.lower()
    if suffix == ".html":
        from aegis.timeline.html import render_html

        out.write_text(render_html(tl), encoding="utf-8")
    elif suffix in (".png", ".svg"):
        from aegis.timeline.plot import render_image

        render_image(tl, out)
    else:
        raise TimelineError(f"{out}: unknown format {suffix!r}; use one of {', '.join(FORMATS)}")
    return out


def write_run_timeline(state_dir: Path) -> Path | None:
    """`aegis run`'s last act: `<state_dir>/timeline.html`, its path printed on stderr.

    Never raises (a run's exit code does not depend on its picture); None if it failed."""
    try:
        out = write(load(state_dir), state_dir / "timeline.html")
    except Exception as exc:
        print(f"aegis: no timeline: {exc}", file=sys.stderr, flush=True)
        return None
    print(f"aegis: timeline at {out}", file=sys.stderr, flush=True)
    return out
