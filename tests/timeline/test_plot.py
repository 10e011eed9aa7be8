"""The timeline as an image: one row per pod up to a bound (an image of 12,500 rows was
1,200 x 627,000 pixels, drawn in 2.5 minutes and 4 GB); past it the pods with a fault first,
and the title says how many are shown."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image

from aegis.timeline.model import Band, Marker, Timeline
from aegis.timeline.plot import MAX_IMAGE_PODS, image_pods, render_image


def timeline(pods: int, faulty: tuple[int, ...] = ()) -> Timeline:
    names = [f"train-worker-{r:05d}" for r in range(pods)]
    bands = {p: [Band("BootChecking", 0.0, 5.0), Band("RunCommand", 5.0, 9.0)] for p in names}
    markers = [Marker(names[r], 6.0, "error", "1", "", "CUDA error") for r in faulty]
    return Timeline(
        title="job train Failed",
        job="train",
        namespace="team",
        pods=names,
        start=0.0,
        end=9.0,
        pod_bands=bands,
        job_bands=[Band("RunCommand", 0.0, 9.0)],
        markers=markers,
        phase="Failed",
    )


def test_a_small_job_has_a_row_per_pod(tmp_path: Path) -> None:
    tl = timeline(40, faulty=(3,))
    assert image_pods(tl) == tl.pods
    out = tmp_path / "t.svg"
    render_image(tl, out)
    text = out.read_text()
    assert all(p in text for p in tl.pods) and "pods shown" not in text


def test_a_large_job_shows_its_faulty_pods_first_and_says_how_many(tmp_path: Path) -> None:
    tl = timeline(5000, faulty=(4999, 2500, 7))
    shown = image_pods(tl)
    assert len(shown) == MAX_IMAGE_PODS
    assert {tl.pods[4999], tl.pods[2500], tl.pods[7]} <= set(shown)
    assert shown == [p for p in tl.pods if p in set(shown)]  # in the timeline's order
    svg, png = tmp_path / "t.svg", tmp_path / "t.png"
    render_image(tl, svg)
    text = svg.read_text()
    assert f"{MAX_IMAGE_PODS} of 5000 pods shown" in text and tl.pods[4999] in text
    assert tl.pods[4998] not in text  # no fault: past the bound
    render_image(tl, png)
    height, width = matplotlib.image.imread(png).shape[:2]
    assert width == 1200 and height < 100 * (1.2 + 0.5 * (MAX_IMAGE_PODS + 1)) + 200
