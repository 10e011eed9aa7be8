"""The timeline as PNG or SVG, drawn with matplotlib (Agg backend, no display needed)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from aegis.timeline.html import LEGEND_LABELS, MARKER_STYLE, PHASE_COLOURS
from aegis.timeline.model import Band, Timeline

_MPL_MARKERS = {
    "circle": "o",
    "hexagon": "h",
    "diamond": "D",
    "triangle": "^",
    "square": "s",
    "right": ">",
    "down": "v",
    "star": "*",
    "cross": "x",
    "plus": "P",
    "octagon": "8",
    "pentagon": "p",
    "left": "<",
}
# a "retry N" label on the job's row needs this share of the width to itself: a label whose
# start is closer to the last one is left out (short bands' labels were drawn over each other)
LABEL_GAP = 0.09
LEGEND_COLUMNS = 7


# an image of more rows is no picture (a row per pod of a 12,500-pod job is 627,000 pixels
# high); the HTML timeline shows every pod
MAX_IMAGE_PODS = 100


def image_pods(tl: Timeline, limit: int = MAX_IMAGE_PODS) -> list[str]:
    """The pods an image has a row for: every pod up to `limit`; past it `limit` of them,
    those with a marker first, in the timeline's order."""
    if len(tl.pods) <= limit:
        return list(tl.pods)
    marked = {m.pod for m in tl.markers}
    keep = set(sorted(tl.pods, key=lambda p: p not in marked)[:limit])  # stable: marked first
    return [p for p in tl.pods if p in keep]


def render_image(tl: Timeline, path: Path) -> None:
    """Write `path` (.png or .svg) with one row per pod (`image_pods`), the job on top."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text (searchable)
    from matplotlib import pyplot as plt

    pods = image_pods(tl)
    rows = ["job", *pods]
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.5 * len(rows)))
    try:
        t0 = tl.start

        span = max(tl.end - t0, 1e-3)

        def draw(y: int, bands: list, label_count: bool) -> None:
            for b in bands:
                ax.barh(
                    y,
                    max(b.end - b.start, 1e-6),
                    left=b.start - t0,
                    height=0.6,
                    color=PHASE_COLOURS.get(b.phase, "#bbbbbb"),
                    edgecolor="none",
                )
            if label_count:
                for x, text in retry_labels(bands, t0, span):
                    ax.text(x, y + 0.42, text, fontsize=7)

        draw(0, tl.job_bands, True)
        for i, pod in enumerate(pods, start=1):
            draw(i, tl.pod_bands.get(pod, []), False)
        _draw_markers(ax, tl, pods)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([tl.job_label, *pods])
        ax.invert_yaxis()
        ax.set_xlim(0, max(tl.end - t0, 1e-3))
        ax.set_xlabel("seconds since the job started")
        title = _title(tl, len(pods))
        ax.set_title(title, fontsize=10)
        handles = _legend_handles(tl)
        # the legend below the axes, in room of its own (it ran into the axis label)
        legend_in = 0.22 * -(-len(handles) // LEGEND_COLUMNS) + 0.1
        height = 1.2 + 0.5 * len(rows) + 0.18 * title.count("\n") + legend_in
        fig.set_size_inches(12, height)
        fig.legend(
            handles=handles, loc="lower center", ncol=LEGEND_COLUMNS, fontsize=7, frameon=False
        )
        fig.tight_layout(rect=(0, legend_in / height, 1, 1))
        fig.savefig(path, format=path.suffix.lstrip(".").lower(), dpi=100)
    finally:
        plt.close(fig)


def _draw_markers(ax: Any, tl: Timeline, pods: list[str]) -> None:
    """Each marker on its pod's row (the job's on the top row); the recoveries labelled."""
    index = {p: i for i, p in enumerate(pods, start=1)}
    for m in [*tl.markers, *tl.job_markers]:
        colour, shape = MARKER_STYLE.get(m.kind, MARKER_STYLE["other"])
        y = 0 if m in tl.job_markers else index.get(m.pod)
        if y is None:
            continue
        x = m.time - tl.start
        ax.plot(x, y, _MPL_MARKERS[shape], color=colour, markersize=8, zorder=3)
        if m.kind in ("reschedule", "container_restart", "evicted"):
            ax.annotate(m.label, (x, y), xytext=(6, 8), textcoords="offset points", fontsize=7)


def _title(tl: Timeline, shown: int) -> str:
    """The run's line, why it failed (two lines at most), and how many pods are drawn."""
    title = tl.title
    if tl.cause:
        cause = textwrap.wrap(f"why it failed: {tl.cause}", 120)
        title += "\n" + "\n".join(cause[:2]) + (" …" if len(cause) > 2 else "")
    if shown < len(tl.pods):
        title += (
            f"\n{shown} of {len(tl.pods)} pods shown, those with faults first "
            "(the HTML timeline shows every pod)"
        )
    return title


def _legend_handles(tl: Timeline) -> list[Any]:
    """The phases' colours, then the kinds of marker drawn (in the legend's order)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [Patch(color=c, label=p) for p, c in PHASE_COLOURS.items()]
    present = {m.kind for m in [*tl.markers, *tl.job_markers]}
    for k in [k for k in LEGEND_LABELS if k in present]:  # the legend's order, user names
        colour, shape = MARKER_STYLE[k]
        marker = _MPL_MARKERS[shape]
        label = LEGEND_LABELS[k]
        handles.append(Line2D([], [], marker=marker, color=colour, linestyle="", label=label))
    return handles


def retry_labels(bands: list[Band], t0: float, span: float) -> list[tuple[float, str]]:
    """Where the job's row says "retry N": at the band where N first appears, and only where
    it does not run into the previous label (LABEL_GAP of the width apart)."""
    out: list[tuple[float, str]] = []
    shown = 0
    for b in bands:
        x = b.start - t0
        if b.recover_count == shown or b.end <= b.start:
            continue
        if out and x - out[-1][0] < LABEL_GAP * span:
            continue  # too close: the next count's label (or the band's tooltip) says it
        shown = b.recover_count
        out.append((x, f"retry {shown}"))
    return out
