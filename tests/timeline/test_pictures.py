"""What the timeline's pictures say about how a job ended: the retries it used (never
"recover 4/3"), its stop as an event on the job's row, a final band that can be seen, labels
that do not run into each other, a legend in the user's words, one shape per kind."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

from aegis.checks.faultlog import FaultLogWriter
from aegis.protocol.envelope import MessageType
from aegis.protocol.faults import FaultKind
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.steplog import StepLog
from aegis.timeline.html import LEGEND_LABELS, MARKER_STYLE, render_html
from aegis.timeline.model import Band, from_steplog, load
from aegis.timeline.plot import LABEL_GAP, render_image, retry_labels

from ..runtime.test_controller_slow_path import PODS, report


def state_dir(tmp: Path, max_retry: int = 2) -> tuple[Path, ControllerCore]:
    """A job's controller with its step log and fault log in `tmp`, both pods in RunCommand."""
    faults = FaultLogWriter(tmp / "faults.jsonl")
    steps = StepLog(tmp / "steps.jsonl")
    core = ControllerCore(
        JobConfig("job", "default", PODS, max_retry),
        FileStatusStore(tmp / "status.json"),
        steps,
        on_fault=faults.write,
    )
    for p in PODS:
        core.on_ack(report(p, MessageType.ACK, 0))
    for p in PODS:
        core.on_report(report(p, MessageType.FINISH, int(core.state.masterSeq)))
    assert core.state.phase == "RunCommand"
    return tmp, core


def fail_once(core: ControllerCore) -> None:
    """Pod 1's command fails; the troubleshoot round passes (RunCommand again, or Failed)."""
    core.on_report(report(PODS[1], MessageType.ERROR, int(core.state.masterSeq), reason="boom"))
    seq = int(core.state.masterSeq)
    for p in PODS:
        core.on_report(report(p, MessageType.FINISH, seq))


def test_a_stopped_job_shows_its_stop_and_the_retries_it_used(tmp_path: Path) -> None:
    tmp, core = state_dir(tmp_path)
    fail_once(core)
    core.on_quit()
    assert core.terminal == "Failed" and int(core.state.recoverCount) == 3  # the wrap-up's
    core.steplog.close()  # type: ignore[union-attr]
    tl = load(tmp)
    assert tl.job_label == "job: Failed (stopped), retries 1/2"
    assert [b.recover_count for b in tl.job_bands][-1] == 1  # not MaxRetry + 1
    (stop,) = tl.job_markers
    assert (stop.kind, stop.label, stop.pod) == ("stop", "job stopped", "job")
    assert "asked by the operator" in stop.text and stop not in tl.markers
    assert tl.cause == "stopped: asked by the operator (aegis ctl stop)"
    page = render_html(tl)
    assert "why it failed: stopped: asked by the operator" in page and "recover " not in page
    svg = tmp / "t.svg"
    render_image(tl, svg)
    text = svg.read_text()
    assert "job: Failed (stopped), retries 1/2" in text and "job stopped" in text


def test_exhausted_retries_say_so_and_never_more_than_max(tmp_path: Path) -> None:
    tmp, core = state_dir(tmp_path, max_retry=1)
    fail_once(core)
    fail_once(core)
    assert core.terminal == "Failed"
    core.steplog.close()  # type: ignore[union-attr]
    tl = from_steplog(tmp / "steps.jsonl", tmp / "faults.jsonl", tmp / "status.json")
    assert tl.job_label == "job: Failed (retries exhausted), retries 1/1"
    assert max(b.recover_count for b in tl.job_bands) == 1
    assert tl.cause == (
        "retries exhausted (2 failures counted, max retries 1); the same error 2 times in a "
        "row: boom"
    )
    assert not tl.job_markers


def test_the_final_band_has_a_width(tmp_path: Path) -> None:
    tmp, core = state_dir(tmp_path)
    time.sleep(0.01)
    for p in PODS:
        core.on_report(report(p, MessageType.FINISH, int(core.state.masterSeq)))
    assert core.terminal == "Succeed"
    core.steplog.close()  # type: ignore[union-attr]
    tl = load(tmp)
    last = tl.job_bands[-1]
    assert last.phase == "Succeed" and last.end - last.start >= 0.5
    assert all(bands[-1].end - bands[-1].start >= 0.5 for bands in tl.pod_bands.values())


def test_retry_labels_never_run_into_each_other() -> None:
    # a job that failed every second: its short bands each carry a count
    bands = [
        Band("RunCommand" if i % 2 else "Troubleshooting", i, i + 1, i // 2) for i in range(40)
    ]
    labels = retry_labels(bands, 0.0, 40.0)
    assert labels and labels[0] == (2.0, "retry 1")
    starts = [x for x, _ in labels]
    assert all(b - a >= LABEL_GAP * 40.0 for a, b in itertools.pairwise(starts))
    counts = [int(text.split()[1]) for _, text in labels]
    assert counts == sorted(set(counts))  # each count once, in order


def test_every_kind_has_its_own_shape_and_a_users_name() -> None:
    assert set(MARKER_STYLE) == {k.value for k in FaultKind} == set(LEGEND_LABELS)
    shapes = [shape for _, shape in MARKER_STYLE.values()]
    assert len(set(shapes)) == len(shapes)
    assert not any("_" in label for label in LEGEND_LABELS.values())


def test_the_png_legend_uses_the_users_names(tmp_path: Path) -> None:
    tmp, core = state_dir(tmp_path)
    fail_once(core)
    core.on_report(report(PODS[0], MessageType.HANG, int(core.state.masterSeq), reason="slow"))
    core.steplog.close()  # type: ignore[union-attr]
    tl = load(tmp)
    kinds = {m.kind for m in tl.markers}
    assert {"error", "hang", "hang_quit"} <= kinds
    svg = tmp / "t.svg"
    render_image(tl, svg)
    text = svg.read_text()
    assert "command failed (Level 1)" in text and "eviction decided" in text
    assert "hang_quit" not in text and "evicted_exit" not in text
