"""`aegis timeline` on the logs of real runs: the model, the HTML rendered by headless
Chromium (DOM after its script ran, and a screenshot's pixels), PNG and SVG files."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from aegis.checks.faultlog import read_fault_log
from aegis.timeline import load

from ..support import AEGIS, AegisRun

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
PODS = ["local-worker-0", "local-worker-1"]


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    profile = tmp / "chromium-profile"
    profile.mkdir(exist_ok=True)
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)


class Dom(HTMLParser):
    """The elements of a dumped DOM: (tag, attrs) in order, and the text of h1."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.h1 = ""
        self._in_h1 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))
        self._in_h1 = tag == "h1"

    def handle_endtag(self, tag: str) -> None:
        if tag == "h1":
            self._in_h1 = False

    def handle_data(self, data: str) -> None:
        if self._in_h1:
            self.h1 += data

    def having(self, tag: str, cls: str) -> list[dict[str, str]]:
        return [a for t, a in self.elements if t == tag and cls in a.get("class", "").split()]


def summary_of(run: AegisRun) -> str:
    (line,) = [ln for ln in run.stderr.splitlines() if ln.startswith("aegis: job local ")]
    return line.removeprefix("aegis: ")


def test_aegis_run_writes_its_timeline_and_says_where(level3_run: AegisRun) -> None:
    path = level3_run.state / "timeline.html"
    assert f"aegis: timeline at {path}" in level3_run.stderr
    assert path.is_file() and "<svg" not in path.read_text()  # drawn by its inline script


def test_level3_run_has_a_row_per_pod_and_a_marker_per_fault(level3_run: AegisRun) -> None:
    faults = read_fault_log(level3_run.state / "faults.jsonl")
    tl = load(level3_run.state)
    assert tl.pods == PODS
    assert tl.title == summary_of(level3_run)
    assert len(tl.markers) == len(faults) >= 3
    kinds = [(m.pod, m.kind, m.level) for m in tl.markers]
    assert ("local-worker-1", "error", "1") in kinds  # the crash: Level 1 troubleshoot
    # its record says which rank failed and how, as fields (the agent's ProcessFailure)
    (crash,) = [f for f in faults if f.kind == "error"]
    assert (crash.pod, crash.rank, crash.exit_code, crash.signal) == ("local-worker-1", 1, 1, None)
    assert ("local-worker-1", "check_failed", None) in kinds  # GPU lost in troubleshooting
    (l3,) = [m for m in tl.markers if m.kind == "reschedule"]
    assert (l3.pod, l3.node, l3.label) == ("local-worker-1", "node-2", "Level 3: left node-2")
    assert [e["node"] for e in tl.error_nodes] == ["node-2"]
    # the job's phases over time, with the recover count, end in Succeed
    phases = [b.phase for b in tl.job_bands]
    assert phases[0] == "Pending" and "Troubleshooting" in phases and phases[-1] == "Succeed"
    assert tl.job_bands[-1].recover_count == 1 and tl.recover_count == 1
    for pod in PODS:
        bands = tl.pod_bands[pod]
        assert bands[0].start == tl.start and bands[-1].phase == "Succeed"
        assert all(a.end == b.start for a, b in itertools.pairwise(bands))


def test_eviction_run_shows_hang_decision_and_eviction(evict_run: AegisRun) -> None:
    faults = read_fault_log(evict_run.state / "faults.jsonl")
    tl = load(evict_run.state)
    assert tl.title == summary_of(evict_run)
    assert len(tl.markers) == len(faults)
    kinds = [m.kind for m in tl.markers if m.pod == "local-worker-1"]
    assert kinds[:3] == ["hang", "hang_quit", "evicted"]
    assert "evicted_exit" in kinds and "reschedule" not in kinds  # not counted twice
    assert [b.phase for b in tl.pod_bands["local-worker-0"]].count("Restarting") == 0


def test_a_step_log_alone_gives_markers_from_its_steps(
    level3_run: AegisRun, tmp_path: Path
) -> None:
    steps = tmp_path / "steps.jsonl"
    shutil.copy(level3_run.state / "steps.jsonl", steps)
    r = subprocess.run(
        [*AEGIS, "timeline", str(steps)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "timeline.html")
    tl = load(steps)
    assert tl.pods == PODS
    assert ("local-worker-1", "reschedule") in [(m.pod, m.kind) for m in tl.markers]
    assert ("local-worker-1", "error") in [(m.pod, m.kind) for m in tl.markers]


def test_a_fault_line_cut_inside_a_utf8_character_is_skipped(
    level3_run: AegisRun, tmp_path: Path
) -> None:
    # a crash while the fault log was written (its reasons are UTF-8 as they are)
    state = tmp_path / "state"
    shutil.copytree(level3_run.state, state)
    faults = read_fault_log(state / "faults.jsonl")
    with open(state / "faults.jsonl", "ab") as f:
        f.write('{"pod":"local-worker-0","kind":"error","reason":"é'.encode()[:-1])
    assert len(load(state).markers) == len(faults)


@needs_chromium
@pytest.mark.parametrize("which", ["level3_run", "evict_run"])
def test_the_html_renders_in_chromium_with_rows_and_markers(
    which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    run: AegisRun = request.getfixturevalue(which)
    html = run.state / "timeline.html"
    faults = read_fault_log(run.state / "faults.jsonl")
    out = chromium(tmp_path, "--dump-dom", html.as_uri())
    dom = Dom()
    dom.feed(out.stdout)
    body = [a for t, a in dom.elements if t == "body"]
    assert body and body[0].get("data-rendered") == "yes"  # the inline script ran to its end
    assert [a["data-pod"] for a in dom.having("g", "row")] == PODS
    markers = dom.having("g", "marker")
    assert len(markers) == len(faults)
    assert len(dom.having("g", "jobrow")) == 1
    bands = dom.having("rect", "band")
    assert {"Pending", "BootChecking", "RunCommand", "Succeed"} <= {b["data-phase"] for b in bands}
    assert dom.h1 == summary_of(run)
    # nothing is fetched from anywhere: no src/href attributes at all
    assert not [a for _, a in dom.elements if "src" in a or "href" in a]


@needs_chromium
def test_the_screenshot_shows_bands_and_markers(level3_run: AegisRun, tmp_path: Path) -> None:
    from PIL import Image

    shot = tmp_path / "shot.png"
    chromium(
        tmp_path,
        "--window-size=1250,500",
        f"--screenshot={shot}",
        (level3_run.state / "timeline.html").as_uri(),
    )
    img = Image.open(shot).convert("RGB")
    colours = {c for _, c in img.getcolors(maxcolors=1 << 20) or []}
    for hexcode in ("#74c476", "#fdd0a2", "#31a354", "#e41a1c", "#ff7f00"):
        rgb = tuple(int(hexcode[i : i + 2], 16) for i in (1, 3, 5))
        assert rgb in colours, f"{hexcode} (a band or a marker) is not on the screenshot"


def test_png_and_svg_files(level3_run: AegisRun, tmp_path: Path) -> None:
    for suffix in ("png", "svg"):
        out = tmp_path / f"t.{suffix}"
        r = subprocess.run(
            [*AEGIS, "timeline", str(level3_run.state), "-o", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        data = out.read_bytes()
        if suffix == "png":
            assert data.startswith(b"\x89PNG\r\n\x1a\n")
        else:
            root = ET.fromstring(data)
            assert root.tag.endswith("svg")
            text = data.decode()
            assert all(p in text for p in PODS) and "Level 3: left node-2" in text


def test_bad_output_and_source_are_usage_errors(tmp_path: Path) -> None:
    r = subprocess.run(
        [*AEGIS, "timeline", str(tmp_path), "-o", str(tmp_path / "t.txt")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and ".html, .png or .svg" in r.stderr
    r = subprocess.run(
        [*AEGIS, "timeline", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2 and "no steps.jsonl" in r.stderr
