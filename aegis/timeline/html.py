"""The timeline as one self-contained HTML file: the data inline, an inline script draws SVG.

No network: no external script, style sheet, font or image. Each pod is a `<g class="row">`
with its phase bands (`rect.band`) and markers (`g.marker`, `data-kind`); the job's phase,
the retries it used and its own markers (a stop) are the top row (`g.jobrow`); the summary
line is the page's title and `<h1>`, why a failed job failed is below it (`#cause`).
"""

from __future__ import annotations

import html
import json

from aegis.timeline.model import Timeline

PHASE_COLOURS = {
    "Pending": "#d9d9d9",
    "BootChecking": "#9ecae1",
    "RunCommand": "#74c476",
    "Restarting": "#fdae6b",
    "Troubleshooting": "#fdd0a2",
    "Succeed": "#31a354",
    "Failed": "#de2d26",
}
# kind -> (colour, shape): each kind its own shape (a shape means one thing, in black and
# white too); shapes: circle, hexagon, diamond, triangle, square, right, down, star, cross,
# plus, octagon, pentagon, left
MARKER_STYLE = {
    "error": ("#e41a1c", "circle"),
    "check_failed": ("#ff7f00", "hexagon"),
    "container_restart": ("#984ea3", "diamond"),
    "reschedule": ("#000000", "triangle"),
    "evicted": ("#a65628", "square"),
    "evicted_exit": ("#a65628", "right"),
    "hang": ("#d4b000", "down"),
    "hang_quit": ("#d4b000", "star"),
    "pod_lost": ("#666666", "cross"),
    "lost": ("#666666", "plus"),
    "stop": ("#8b0000", "octagon"),
    "save_failed": ("#8b0000", "pentagon"),
    "other": ("#666666", "left"),
}
# kind -> what the legend calls it (the words of docs/operations.md, not the code's names)
LEGEND_LABELS = {
    "error": "command failed (Level 1)",
    "check_failed": "health check failed",
    "container_restart": "container restart (Level 2)",
    "reschedule": "left its node (Level 3)",
    "evicted": "slow node evicted",
    "evicted_exit": "left after its eviction",
    "hang": "marked slow",
    "hang_quit": "eviction decided",
    "pod_lost": "pod restarted",
    "lost": "heartbeats missed",
    "stop": "job stopped",
    "save_failed": "status save failed",
    "other": "other fault",
}

_SCRIPT = r"""
(function () {
  const D = JSON.parse(document.getElementById("timeline-data").textContent);
  const S = JSON.parse(document.getElementById("timeline-style").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const LEFT = 270, RIGHT = 30, TOP = 40, ROW = 34, W = 1280;
  const rows = D.pods.length + 1;
  const H = TOP + rows * ROW + 60;
  const span = Math.max(D.end - D.start, 1e-3);
  const x = t => LEFT + (t - D.start) / span * (W - LEFT - RIGHT);
  function el(name, attrs, parent, text) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  const svg = el("svg", {id: "timeline", width: W, height: H, viewBox: `0 0 ${W} ${H}`,
                         "font-family": "sans-serif", "font-size": 12});
  el("rect", {x: 0, y: 0, width: W, height: H, fill: "#ffffff"}, svg);
  function bands(g, list, y, withCount) {
    for (const b of list) {
      const x0 = x(b[1]), x1 = Math.max(x(b[2]), x0 + 1);
      const r = el("rect", {class: "band", "data-phase": b[0], x: x0, y: y + 4,
                            width: x1 - x0, height: ROW - 8,
                            fill: S.phases[b[0]] || "#bbbbbb"}, g);
      const secs = (b[2] - b[1]).toFixed(2);
      el("title", {}, r, `${b[0]} for ${secs} s` + (withCount ? `, retries used ${b[3]}` : ""));
      const label = `${b[0]}` + (b[3] ? ` (retry ${b[3]})` : "");
      const short = b[3] ? `${b[0]} (${b[3]})` : b[0];
      const fit = [label, short].find(t => t.length * 7 + 8 < x1 - x0);  // ~7 px a character
      if (withCount && fit) el("text", {x: x0 + 4, y: y + ROW / 2 + 4, fill: "#000"}, g, fit);
    }
  }
  function ring(cx, cy, n, r, turn, inner) {  // a regular polygon, or a star with `inner`
    const pts = [];
    for (let i = 0; i < (inner ? 2 * n : n); i++) {
      const a = turn + i * Math.PI * 2 / (inner ? 2 * n : n), rr = inner && i % 2 ? inner : r;
      pts.push(`${(cx + rr * Math.sin(a)).toFixed(1)},${(cy - rr * Math.cos(a)).toFixed(1)}`);
    }
    return pts.join(" ");
  }
  function shape(g, kind, cx, cy) {
    const st = S.markers[kind] || S.markers.other, c = st[0], r = 7;
    const pts = {
      diamond: ring(cx, cy, 4, r, 0),
      triangle: ring(cx, cy, 3, r, 0),
      down: ring(cx, cy, 3, r, Math.PI),
      right: ring(cx, cy, 3, r, Math.PI / 2),
      left: ring(cx, cy, 3, r, -Math.PI / 2),
      hexagon: ring(cx, cy, 6, r, 0),
      octagon: ring(cx, cy, 8, r, Math.PI / 8),
      pentagon: ring(cx, cy, 5, r, 0),
      star: ring(cx, cy, 5, r + 1, 0, r / 2.2),
    };
    if (st[1] === "circle") return el("circle", {cx, cy, r: r - 1, fill: c, stroke: "#fff"}, g);
    if (st[1] === "square")
      return el("rect", {x: cx - r + 1, y: cy - r + 1, width: 2 * r - 2, height: 2 * r - 2,
                         fill: c, stroke: "#fff"}, g);
    if (st[1] === "cross")
      return el("path", {d: `M${cx - r},${cy - r}L${cx + r},${cy + r}M${cx - r},${cy + r}` +
                            `L${cx + r},${cy - r}`, stroke: c, "stroke-width": 3}, g);
    if (st[1] === "plus")
      return el("path", {d: `M${cx - r},${cy}L${cx + r},${cy}M${cx},${cy - r}L${cx},${cy + r}`,
                         stroke: c, "stroke-width": 3}, g);
    return el("polygon", {points: pts[st[1]], fill: c, stroke: "#fff"}, g);
  }
  function marker(g, m, y) {
    const mg = el("g", {class: "marker", "data-kind": m.kind, "data-level": m.level || ""}, g);
    shape(mg, m.kind, x(m.t), y + ROW / 2);
    const when = new Date(m.t * 1000).toISOString().replace("T", " ").slice(0, 23);
    el("title", {}, mg, `${when} ${m.label}${m.node ? " on " + m.node : ""}: ${m.text}`);
    return mg;
  }
  // the job's row
  const jy = TOP;
  const job = el("g", {class: "jobrow"}, svg);
  el("text", {x: 8, y: jy + ROW / 2 + 4, "font-weight": "bold"}, job, D.jobLabel);
  bands(job, D.jobBands, jy, true);
  for (const m of D.jobMarkers) marker(job, m, jy);
  D.pods.forEach((pod, i) => {
    const y = TOP + (i + 1) * ROW;
    const g = el("g", {class: "row", "data-pod": pod}, svg);
    el("rect", {x: LEFT, y, width: W - LEFT - RIGHT, height: ROW,
                fill: i % 2 ? "#fafafa" : "#f2f2f2"}, g);
    el("text", {x: 8, y: y + ROW / 2 + 4}, g, pod);
    bands(g, D.podBands[pod] || [], y, false);
    for (const m of D.markers.filter(m => m.pod === pod)) {
      const mg = marker(g, m, y);
      if (m.kind === "reschedule" || m.kind === "container_restart" || m.kind === "evicted")
        el("text", {x: x(m.t) + 9, y: y + 11, "font-size": 10, fill: "#333"}, mg, m.label);
    }
  });
  // the time axis
  const ay = TOP + rows * ROW + 4;
  el("line", {x1: LEFT, y1: ay, x2: W - RIGHT, y2: ay, stroke: "#000"}, svg);
  const step = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600]
    .find(s => span / s <= 12) || 43200;
  for (let s = 0; s <= span + 1e-9; s += step) {
    const tx = x(D.start + s);
    el("line", {x1: tx, y1: ay, x2: tx, y2: ay + 5, stroke: "#000"}, svg);
    el("text", {class: "tick", x: tx, y: ay + 18, "text-anchor": "middle"}, svg,
       (s >= 120 ? (s / 60).toFixed(0) + " min" : (+s.toFixed(1)) + " s"));
  }
  const t0 = new Date(D.start * 1000).toISOString().replace("T", " ").slice(0, 19);
  el("text", {x: LEFT, y: ay + 36, fill: "#555"}, svg, `time since ${t0} UTC`);
  document.getElementById("chart").appendChild(svg);
  // the legend
  const legend = document.getElementById("legend");
  for (const p in S.phases) {
    const s = document.createElement("span");
    s.className = "key";
    s.innerHTML = `<i style="background:${S.phases[p]}"></i>${p}`;
    legend.appendChild(s);
  }
  const present = new Set([...D.markers, ...D.jobMarkers].map(m => m.kind));
  for (const k of Object.keys(S.labels).filter(k => present.has(k))) {
    const s = document.createElement("span");
    s.className = "key";
    s.setAttribute("data-kind", k);
    const glyph = {circle: "&#9679;", diamond: "&#9670;", triangle: "&#9650;",
                   square: "&#9632;", cross: "&#10005;", down: "&#9660;", right: "&#9654;",
                   left: "&#9664;", hexagon: "&#11042;", octagon: "&#11204;", star: "&#9733;",
                   plus: "&#10010;", pentagon: "&#11039;"}[S.markers[k][1]];
    s.innerHTML = `<b style="color:${S.markers[k][0]}">${glyph}</b> ${S.labels[k]}`;
    legend.appendChild(s);
  }
  document.body.setAttribute("data-rendered", "yes");
})();
"""

# nothing may be loaded from anywhere: only the page's own inline script and style
_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"


def render_html(tl: Timeline) -> str:
    """One HTML page: no network, everything inline."""
    data = json.dumps(tl.to_json(), allow_nan=False).replace("</", "<\\/")
    style = json.dumps(
        {"phases": PHASE_COLOURS, "markers": MARKER_STYLE, "labels": LEGEND_LABELS}
    ).replace("</", "<\\/")
    title = html.escape(tl.title)
    nodes = "".join(
        f"<tr><td>{html.escape(str(e.get('node', '')))}</td>"
        f"<td>{html.escape(str(e.get('reason', '')))}</td></tr>"
        for e in tl.error_nodes
    )
    faults = "".join(
        f"<tr><td>+{m.time - tl.start:.2f} s ({_clock(m.time)})</td>"
        f"<td>{html.escape(m.pod)}</td><td>{html.escape(m.label)}</td>"
        f"<td>{html.escape(m.node)}</td><td>{html.escape(m.text)}</td></tr>"
        for m in sorted([*tl.markers, *tl.job_markers], key=lambda m: m.time)
    )
    cause = f'<p id="cause">why it failed: {html.escape(tl.cause)}</p>' if tl.cause else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 16px; color: #222; }}
h1 {{ font-size: 16px; }}
.key {{ margin-right: 14px; font-size: 12px; white-space: nowrap; }}
.key i {{ display: inline-block; width: 12px; height: 12px; margin-right: 4px;
  vertical-align: -2px; }}
table {{ border-collapse: collapse; font-size: 12px; margin-top: 8px; }}
td, th {{ border: 1px solid #ccc; padding: 2px 6px; text-align: left; }}
</style></head>
<body>
<h1 id="summary">{title}</h1>
{cause}
<div id="chart"><noscript>This page draws its timeline with an inline script.</noscript></div>
<div id="legend"></div>
<h2 style="font-size:14px">Error nodes</h2>
<table id="error-nodes"><tr><th>node</th><th>reason</th></tr>{nodes}</table>
<h2 style="font-size:14px">Faults</h2>
<table id="faults"><tr><th>time</th><th>pod</th><th>what</th><th>node</th><th>message</th></tr>
{faults}</table>
<script type="application/json" id="timeline-data">{data}</script>
<script type="application/json" id="timeline-style">{style}</script>
<script>{_SCRIPT}</script>
</body></html>
"""


def _clock(t: float) -> str:
    import time

    return time.strftime("%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d} UTC"
