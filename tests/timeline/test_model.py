"""The timeline of a step log: each pod's bands are its inner phase between the steps that
changed it, the job's its phase and the retries used; built in O(the steps and the pods they
change), so that the log of a large run loads (a 12,500-pod run's never did)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aegis.values
from aegis.generated.aegis_phase import CFG_CONSTANTS, State, next_states
from aegis.runtime.engine import Engine, StepResult
from aegis.runtime.steplog import StepLog
from aegis.timeline.model import MIN_TERMINAL_BAND_S, TERMINAL_BAND, from_steplog
from aegis.values import ModelValue, apply

ENDINGS = ("envQuit", "jobDone")


def reference_bands(
    times: list[float], values: list[object], end: float
) -> list[tuple[object, float, float]]:
    """(value, start, end) of each run of equal values, written out the plain way."""
    out: list[tuple[object, float, float]] = []
    for t, v in zip(times, values, strict=True):
        if out and out[-1][0] == v:
            continue
        if out:
            out[-1] = (out[-1][0], out[-1][1], t)
        out.append((v, t, t))
    out[-1] = (out[-1][0], out[-1][1], max(end, out[-1][1]))
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 40), st.integers(0, 12), st.integers(0, 40))
def test_the_bands_are_each_pods_inner_phase_between_its_changes(
    tmp_path_factory: pytest.TempPathFactory, seed: int, before: int, unlogged: int, after: int
) -> None:
    c = CFG_CONSTANTS
    assert c is not None
    path = tmp_path_factory.mktemp("tl") / "steps.jsonl"
    rng = random.Random(seed)
    steps: list[StepResult] = []
    engine = Engine(c, on_step=steps.append)
    log = StepLog(path)
    log.write_initial(c, engine.state)
    states: list[State] = [engine.state]  # one per line of the log, in order

    def walk(n: int, logged: bool = True) -> None:
        for _ in range(n):
            succ = [x for x in next_states(c, engine.state) if x[0] not in ENDINGS]
            if not succ:
                return
            label, _pid, nxt = rng.choice(succ)
            engine.observe(label, **dict(nxt.choices))
            if logged:
                log.write_all(steps[-1:])
                states.append(steps[-1].state)

    walk(before)
    # a controller killed after saving steps it had not logged resumes ahead of its log
    walk(unlogged, logged=False)
    log.write_resume(engine.seq_no, engine.state)
    states.append(engine.state)
    walk(after)
    log.close()
    times = [float(json.loads(line)["t"]) for line in path.read_bytes().splitlines()]
    tl = from_steplog(path)
    end = times[-1]
    if str(states[-1].phase) in ("Succeed", "Failed"):  # the final band is given a width
        end += max(TERMINAL_BAND * (end - times[0]), MIN_TERMINAL_BAND_S)
    for pod in tl.pods:
        w = ModelValue(pod)
        want = reference_bands(times, [str(apply(s.innerPhase, w)) for s in states], end)
        assert [(b.phase, b.start, b.end) for b in tl.pod_bands[pod]] == want, pod
    # the retries used: counted failures up to MaxRetry (not the wrap-up's MaxRetry + 1)
    job = [(str(s.phase), min(int(s.countedFailures), c.MaxRetry)) for s in states]
    want_job = reference_bands(times, job, end)  # type: ignore[arg-type]
    got_job = [((b.phase, b.recover_count), b.start, b.end) for b in tl.job_bands]
    assert got_job == want_job


def test_a_large_runs_log_costs_reads_of_the_pods_each_step_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 100-pod healthy job's log (~500 steps): the timeline reads a pod's inner phase where
    a step changed it, not every pod at every step (100 x 500 reads, and every state kept:
    minutes and tens of GB at 12,500 pods)."""
    from aegis.testing.scripted_job import healthy

    pods = 100
    healthy(tmp_path, pods)  # joins, the bootcheck and the command: Succeed
    lines = len((tmp_path / "steps.jsonl").read_bytes().splitlines())
    reads = 0
    real = aegis.values.apply

    def counting(f: object, x: object) -> object:
        nonlocal reads
        reads += 1
        return real(f, x)

    monkeypatch.setattr(aegis.values, "apply", counting)
    tl = from_steplog(tmp_path / "steps.jsonl")
    assert len(tl.pods) == pods and all(len(b) >= 3 for b in tl.pod_bands.values())
    # each pod's start, a few phase changes of every pod, and the steps' own pods
    assert reads <= 10 * pods + 2 * lines, (reads, lines)
