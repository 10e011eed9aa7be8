"""The timeline as PNG or SVG, drawn with matplotlib (Agg backend, no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aegis.timeline.html import MARKER_STYLE, PHASE_COLOURS
from aegis.timeline.model import Timeline

_MPL_MARKERS = {
    "circle": "o",
    "diamond": "D",
    "triangle": "^",
    "square": "s",
    "cross": "x",
    "down": "v",
}


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
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    pods = image_pods(tl)
    rows = ["job", *pods]
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.5 * len(rows)))
    try:
        t0 = tl.start

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
                if label_count and b.recover_count and b.end > b.start:
                    ax.text(b.start - t0, y + 0.42, f"recover {b.recover_count}", fontsize=7)

        draw(0, tl.job_bands, True)
        for i, pod in enumerate(pods, start=1):
            draw(i, tl.pod_bands.get(pod, []), False)
        index = {p: i for i, p in enumerate(pods, start=1)}
        for m in tl.markers:
            colour, shape = MARKER_STYLE.get(m.kind, MARKER_STYLE["other"])
            y = index.get(m.pod)
            if y is None:
                continue
            ax.plot(m.time - t0, y, _MPL_MARKERS[shape], color=colour, markersize=8, zorder=3)
            if m.kind in ("reschedule", "container_restart", "evicted"):
                ax.annotate(
                    m.label, (m.time - t0, y), xytext=(6, 8), textcoords="offset points", fontsize=7
                )
        ax.set_yticks(range(len(rows)))
        job_label = f"job: {tl.phase}, recover {tl.recover_count}"
        if tl.max_retry is not None:
            job_label += f"/{tl.max_retry}"
        ax.set_yticklabels([job_label, *pods])
        ax.invert_yaxis()
        ax.set_xlim(0, max(tl.end - t0, 1e-3))
        ax.set_xlabel("seconds since the job started")
        title = tl.title
        if len(pods) < len(tl.pods):
            title += (
                f"\n{len(pods)} of {len(tl.pods)} pods shown, those with faults first "
                "(the HTML timeline shows every pod)"
            )
        ax.set_title(title, fontsize=10)
        handles: list[Any] = [Patch(color=c, label=p) for p, c in PHASE_COLOURS.items()]
        kinds = sorted({m.kind for m in tl.markers})
        for k in kinds:
            colour, shape = MARKER_STYLE.get(k, MARKER_STYLE["other"])
            handles.append(
                Line2D([], [], marker=_MPL_MARKERS[shape], color=colour, linestyle="", label=k)
            )
        ax.legend(
            handles=handles,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.35),
            ncol=7,
            fontsize=7,
            frameon=False,
        )
        fig.tight_layout()
        fig.savefig(path, format=path.suffix.lstrip(".").lower(), dpi=100)
    finally:
        plt.close(fig)
