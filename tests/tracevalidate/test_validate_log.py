"""The step log (what it records) and `aegis spec validate-log` (TLC's verdict on it)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.generated.aegis_phase import ACTIONS, Label
from aegis.protocol.envelope import MessageType
from aegis.protocol.state_codec import encode
from aegis.runtime.controller import journal
from aegis.runtime.controller.journal import StatusJournal
from aegis.runtime.engine import RUNTIME_BUDGET, Engine, initial_state, runtime_constants
from aegis.runtime.engine import report as spec_report
from aegis.runtime.steplog import (
    LoggedStep,
    Resume,
    StepLog,
    StepLogError,
    apply_changes,
    changes_between,
    decode_change,
    encode_change,
    open_steplog,
    read_steplog,
)
from aegis.runtime.trace_check import TraceMismatch, check_steplog
from aegis.testing.scripted_job import Job, crash_once, healthy, message, pods
from aegis.tracevalidate import validate, validate_log
from aegis.tracevalidate.actions import bind_action, translation
from aegis.tracevalidate.module import Gap, wrap_long_lines
from aegis.tracevalidate.validate import DEFAULT_SPEC, TraceValidationError
from aegis.values import Fn, ModelValue
from tools.tlc.sany import export_xml

AEGIS = [sys.executable, "-m", "aegis.cli"]


def records(path: Path) -> list[dict]:
    return list(read_steplog(path))


# ---------------- the step log ----------------


def test_the_first_line_holds_the_constants_and_the_initial_state(tmp_path: Path) -> None:
    job = healthy(tmp_path, 2)
    header, _ = open_steplog(job.steplog)
    assert header.constants == runtime_constants(job.pods, 3)
    assert header.constants.FaultBudget == RUNTIME_BUDGET
    assert header.init.phase == "Pending"


def test_a_step_costs_the_same_whatever_the_number_of_pods(tmp_path: Path) -> None:
    """O(1) per step for what it left alone: a join and a report of pod 1 are the same
    bytes in a 3-pod and a 30-pod job."""
    sizes = {}
    for n in (3, 30):
        (tmp_path / str(n)).mkdir()
        job = healthy(tmp_path / str(n), n)
        steps = [r for r in records(job.steplog) if "changed" in r]
        pod1 = json.dumps({"mv": job.pods[1]})
        sizes[n] = [len(json.dumps(r["changed"])) for r in steps if pod1 in json.dumps(r)]
    assert sizes[3] == sizes[30] and len(sizes[3]) == 5  # join, 2 x (agentWork, receive)


def test_changes_are_the_smallest_form_and_apply_back() -> None:
    a, b, c = (ModelValue(x) for x in "abc")
    old = Fn({a: 0, b: 0, c: 0})
    assert encode_change(old, Fn({a: 0, b: 1, c: 0})) == {"except": [[{"mv": "b"}, 1]]}
    assert encode_change(old, Fn({a: 2, b: 2, c: 2})) == {"all": 2}
    msgs = frozenset({"x", "y", "z"})
    assert encode_change(msgs, msgs - {"y"}) == {"plus": [], "minus": ["y"]}
    for new in (Fn({a: 0, b: 1, c: 0}), Fn({a: 2, b: 2, c: 2}), Fn({a: 1, b: 2, c: 3})):
        assert decode_change(encode_change(old, new)).apply(old) == new
    assert decode_change(encode_change(msgs, frozenset({"q"}))).apply(msgs) == {"q"}


def test_unchanged_variables_are_not_logged(tmp_path: Path) -> None:
    job = healthy(tmp_path, 2)
    header, events = open_steplog(job.steplog)
    join = next(iter(events))
    assert isinstance(join, LoggedStep)
    assert set(join.changes) == {"finished", "lastFinishSeq", "agentState", "finishCount"}
    after = apply_changes(header.init, join.changes)
    assert changes_between(header.init, after).keys() == join.changes.keys()


def test_the_fast_check_replays_the_new_format(tmp_path: Path) -> None:
    job = crash_once(tmp_path)
    assert check_steplog(job.steplog, runtime_constants(job.pods, 3)) == 23
    with pytest.raises(TraceMismatch, match="constants"):
        check_steplog(job.steplog, runtime_constants(job.pods, 2))


def test_a_malformed_line_is_named(tmp_path: Path) -> None:
    job = healthy(tmp_path, 2)
    lines = job.steplog.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:4], '{"seq_no": 4, "act', *lines[4:]]) + "\n")
    with pytest.raises(StepLogError, match=r"bad.jsonl:5: malformed"):
        validate_log(bad)
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(lines) + '\n{"seq_no": 99, "act')
    with pytest.raises(StepLogError, match=rf"torn.jsonl:{len(lines) + 1}: truncated"):
        validate_log(torn)
    assert len(records(torn)) == len(lines)  # a live reader skips the line being written
    r = subprocess.run(
        [*AEGIS, "spec", "validate-log", str(torn)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2 and f"torn.jsonl:{len(lines) + 1}: truncated" in r.stderr


def test_a_line_cut_inside_a_utf8_character_is_a_torn_line(tmp_path: Path) -> None:
    # the log is UTF-8 with non-ASCII characters as they are (aegis.protocol.json_bytes): a
    # crash can cut one in half; the readers took that for a broken file (UnicodeDecodeError)
    job = healthy(tmp_path, 2)
    data = job.steplog.read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(data + '{"seq_no":99,"rejected":"é'.encode()[:-1])
    assert len(records(torn)) == len(data.splitlines())
    with pytest.raises(StepLogError, match="truncated"):
        validate_log(torn)


def test_a_log_of_the_old_format_is_refused_clearly(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"init": {}}) + "\n")
    with pytest.raises(StepLogError, match=r"old.jsonl:1: step log format 1"):
        validate_log(old)


def test_a_line_torn_by_a_controller_crash_is_kept_apart_from_the_resumed_log(
    tmp_path: Path,
) -> None:
    job = Job(tmp_path, pods(2))
    job.all_join()
    job.log.close()
    with job.steplog.open("a") as f:
        f.write('{"seq_no": 3, "action": "agen')  # the controller died mid-line
    job.core = job.start()
    job.all_finish()
    job.all_finish()
    job.close()
    assert validate_log(job.steplog).matched


# ---------------- TLC's verdict ----------------


def test_tlc_matches_a_healthy_job_and_prints_json(tmp_path: Path) -> None:
    job = healthy(tmp_path, 3)
    r = subprocess.run(
        [*AEGIS, "spec", "validate-log", "--json", str(job.steplog)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["steps"], out["pods"], out["matched"], out["first_mismatch"]) == (18, 3, True, None)
    assert out["seconds"] > 0


def test_tlc_validates_a_log_across_a_controller_restart(tmp_path: Path) -> None:
    job = crash_once(tmp_path, resume_after_crash=True)
    v = validate_log(job.steplog)
    assert v.matched and v.resumes == 1 and v.steps == check_steplog(job.steplog)


def test_rejected_observations_are_not_steps(tmp_path: Path) -> None:
    job = healthy(tmp_path, 2)
    job.core = job.start()  # resumed after the end
    job.core.on_quit()  # envQuit is not enabled once the job succeeded: logged as rejected
    job.close()
    assert any("rejected" in r for r in records(job.steplog))
    v = validate_log(job.steplog)
    assert v.matched and v.steps == check_steplog(job.steplog) == 13


def test_the_faults_of_a_run_are_checked_with_a_budget_tlc_can_count(tmp_path: Path) -> None:
    """The runtime's FaultBudget is 10**9: TLC runs with the faults the log spent."""
    job = crash_once(tmp_path)
    keep = tmp_path / "trace"
    assert validate_log(job.steplog, keep=keep).matched
    cfg = (keep / "AegisTrace.cfg").read_text()
    assert "FaultBudget = 1\n" in cfg and "MaxSeqGap = 4\n" in cfg
    assert "pod_tv_worker_0 = pod_tv_worker_0" in cfg


def test_a_wrong_initial_state_is_the_first_mismatch(tmp_path: Path) -> None:
    job = healthy(tmp_path, 2)
    lines = job.steplog.read_text().splitlines()
    first = json.loads(lines[0])
    first["init"]["recoverCount"] = 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    v = validate_log(bad)
    assert not v.matched and v.first_mismatch is not None
    assert (v.first_mismatch.event, v.first_mismatch.line) == (0, 1)
    assert v.first_mismatch.diff == {"recoverCount": {"logged": 1, "spec": 0}}


def test_a_wrong_choice_is_rejected_and_explained(tmp_path: Path) -> None:
    job = healthy(tmp_path, 2)
    lines = job.steplog.read_text().splitlines()
    rec = json.loads(lines[1])
    assert rec["action"] == "agentJoin"
    rec["choices"] = [["w", {"mv": job.pods[1]}]]  # logged pod 1, applied pod 0
    lines[1] = json.dumps(rec)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    r = subprocess.run(
        [*AEGIS, "spec", "validate-log", str(bad)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 1
    assert "first mismatch: event 1 (line 2, step 1): agentJoin w = tv-worker-1" in r.stdout
    assert "agentState: logged" in r.stdout


# ---------------- a long log, in parts ----------------

PART = 1_500  # bytes of event text per TLC run: a few events, so a small job has parts


def test_a_log_in_parts_gets_the_verdict_of_one_run(tmp_path: Path) -> None:
    job = crash_once(tmp_path, 3, resume_after_crash=True)
    whole = validate_log(job.steplog)
    parts = validate_log(job.steplog, part_bytes=PART, keep=tmp_path / "keep")
    assert whole.tlc_runs == 1 and parts.tlc_runs >= 4
    assert whole.matched and parts.matched and parts.steps == whole.steps
    assert sorted(p.name for p in (tmp_path / "keep").iterdir()) == [
        f"part-{i}" for i in range(1, parts.tlc_runs + 1)
    ]
    later = (tmp_path / "keep" / "part-2" / "AegisTrace.tla").read_text()
    assert "/\\ Init\n" not in later  # a later part starts where the one before ended


def test_a_wrong_step_in_a_later_part_is_the_first_mismatch(tmp_path: Path) -> None:
    job = healthy(tmp_path, 3)
    lines = job.steplog.read_text().splitlines()
    i = max(n for n, ln in enumerate(lines) if '"action":"receive"' in ln)  # the last report
    rec = json.loads(lines[i])
    assert rec["action"] == "receive"
    rec["changed"]["recoverCount"] = 1
    lines[i] = json.dumps(rec)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    whole = validate_log(bad)
    parts = validate_log(bad, part_bytes=PART)
    assert parts.tlc_runs >= 3 and not whole.matched and not parts.matched
    assert whole.first_mismatch is not None and parts.first_mismatch is not None
    assert parts.first_mismatch.as_json() == whole.first_mismatch.as_json()
    assert parts.first_mismatch.line == i + 1


def test_a_log_with_a_gap_in_parts_matches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = _killed_between_save_and_log(tmp_path, monkeypatch)
    job.restart_controller()
    job.all_finish()
    job.close()
    v = validate_log(job.steplog, part_bytes=PART)
    assert v.matched and v.unlogged_steps == 4 and v.tlc_runs > 1


def test_parts_run_one_per_core_as_far_as_the_memory_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    gib = 1 << 30
    for cores, memory, runs in ((16, 8 * gib, 2), (2, 64 * gib, 2), (16, None, 1), (4, gib, 1)):
        monkeypatch.setattr(validate, "default_workers", lambda cores=cores: cores)
        monkeypatch.setattr(validate, "physical_memory", lambda memory=memory: memory)
        assert validate.parallel_runs() == runs


@settings(max_examples=200, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["step", "step", "step", "gap"]), min_size=1, max_size=40),
    sizes=st.lists(st.integers(1, 500), min_size=80, max_size=80),
    most=st.integers(1, 3_000),
    cores=st.integers(1, 8),
)
def test_parts_cover_the_log_and_are_never_cut_inside_a_gap(
    kinds: list[str], sizes: list[int], most: int, cores: int
) -> None:
    init = initial_state(runtime_constants(pods(2), 3))
    events: list[Any] = []
    for k in kinds:
        n = len(events)
        if k == "step":
            events.append(LoggedStep(n, n, "advance", "advance", (), {}))
        else:  # a gap is always followed by the resume that ends it
            events += [Gap(n, n, 2), Resume(n + 1, n + 2, init)]
    texts = ["x" * sizes[i % len(sizes)] for i in range(len(events))]
    parts = validate._parts(init, events, texts, most, cores)
    assert parts[0].first == 0 and parts[-1].end == len(events)
    for a, b in itertools.pairwise(parts):
        assert a.end == b.first and a.pin is b.start
        assert not isinstance(events[b.first - 1], Gap)
    assert parts[-1].pin is None and all(p.first < p.end for p in parts)
    longest = max(map(len, texts))
    for p in parts:  # a part passes its share by at most its last event and a resume
        assert sum(map(len, texts[p.first : p.end])) < most + 1 + 2 * longest


def test_a_part_must_end_where_the_next_one_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state a part starts from is the log's replay; the part before must reach it in
    TLC, or the parts would not be one behaviour."""
    job = healthy(tmp_path, 2)
    replay = validate.apply_changes

    def drifting(state: Any, changes: Any) -> Any:
        return dataclasses.replace(replay(state, changes), shouldQuit=True)

    monkeypatch.setattr(validate, "apply_changes", drifting)
    with pytest.raises(TraceValidationError, match="did not reach the state"):
        validate_log(job.steplog, part_bytes=PART)


# ---------------- the trace module's actions ----------------


def test_every_action_is_bound_to_its_logged_choices() -> None:
    text = translation(DEFAULT_SPEC.read_text())
    bound = {label: bind_action(text, label) for label in ACTIONS}
    assert bound["agentWork"].choices == ("w", "outcome")
    assert bound["receive"].choices == ("m",)
    assert bound["advance"].choices == ()
    for b in bound.values():
        # only quantifier domains change: removing the inserted text gives the original back
        original = text[text.index(f"\n{b.label} ==") + 1 :].split("\n\n")[0]
        restored = b.text.replace(f"T_{b.label}(traceChoice) ==\n", "")
        for name in b.choices:
            restored = restored.replace(f"{{traceChoice.{name}}} \\cap (\n", "")
            restored = restored.replace(f"{{traceChoice.{name}}} \\cap ", "")
        assert _norm(restored) == _norm(original.split("==", 1)[1])
    # a domain that is one filter is narrowed inside it (TLC evaluates P once, not per pod)
    assert "{x \\in {traceChoice.w} \\cap (Workers) :" in bound["agentWork"].text


def test_a_filter_domain_keeps_its_junction_lists_aligned(tmp_path: Path) -> None:
    """The filter's predicate moves to a line of its own at its own column: a junction list
    that starts on the filter's first line keeps its bullets aligned, and SANY parses it."""
    foo = (
        "Foo == /\\ \\E w \\in {x \\in Workers : /\\ a[x] = 1\n"
        "                                    /\\ b[x] = 2}:\n"
        "             v' = w\n"
        "       /\\ UNCHANGED <<a, b>>"
    )
    bound = bind_action(foo, "Foo")
    assert bound.choices == ("w",)
    lines = bound.text.splitlines()
    first = next(ln for ln in lines if "a[x] = 1" in ln)
    second = next(ln for ln in lines if "b[x] = 2" in ln)
    assert first.index("/\\ a") == second.index("/\\ b") == 36
    assert "{x \\in {traceChoice.w} \\cap (Workers) :" in bound.text
    module = tmp_path / "Bind.tla"
    module.write_text(
        f"---- MODULE Bind ----\nCONSTANT Workers\nVARIABLES a, b, v\n{foo}\n\n{bound.text}\n====\n"
    )
    assert b"T_Foo" in export_xml(module)


def test_long_lines_are_broken_between_values_only() -> None:
    """SANY's PlusCal check costs O(length^2) per line: the module's value lists are broken
    after a comma outside strings, continuing right of the line's junction bullet."""
    values = ", ".join(f'"a, b \\" {i}"' if i % 3 == 0 else f"pod_{i}" for i in range(400))
    line = f"             /\\ agentState = TraceFW(<<{values}>>)"
    wrapped = wrap_long_lines(line, 100).split("\n")
    assert len(wrapped) > 10 and max(map(len, wrapped)) < 100 + 17 + 20  # + indent, one value
    assert all(w.startswith(" " * 17) and not w.startswith(" " * 18) for w in wrapped[1:])
    assert " ".join(w.strip() for w in wrapped) == line.strip()  # only blanks added
    junctions = "x == " + " /\\ ".join(f"a{i} = <<{i}, {i}>>" for i in range(60))
    assert wrap_long_lines(junctions, 100) == junctions  # a bullet after its start: kept


def _norm(s: str) -> str:
    """The text without blanks and the parentheses the rewrite adds."""
    return re.sub(r"[\s()]", "", s)


def _killed_between_save_and_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Job:
    """The controller saves the event that re-issues the command, then dies before logging
    its steps (what test_run_resume's SIGKILL hits when it fires on the saved status)."""
    job = Job(tmp_path, pods(2))
    job.all_join()
    job.all_finish()
    job.crash(job.pods[1])
    job.join(job.pods[1])
    job.finish(job.pods[0])
    write = StatusJournal._write_steplog
    monkeypatch.setattr(StatusJournal, "_write_steplog", _saved_never_logged)
    job.finish(job.pods[1])  # receive, advance, alignRetries: saved only
    assert job.core.state.phase == "RunCommand"
    monkeypatch.setattr(StatusJournal, "_write_steplog", write)
    return job


def test_steps_saved_but_not_logged_before_a_restart_are_bridged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _killed_between_save_and_log(tmp_path, monkeypatch)
    job.restart_controller()
    job.all_finish()
    assert job.core.state.phase == "Succeed"
    job.close()
    assert check_steplog(job.steplog) > 0
    v = validate_log(job.steplog)
    assert v.matched and v.resumes == 1 and v.unlogged_steps == 4


def test_a_gap_is_searched_through_every_state_its_steps_reach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a gap TLC keeps apart the states its steps reach (the trace's VIEW names a
    pinned state by its place in the log, a state in a gap by its values too): with one of
    three unlogged reports an Error, the first successor TLC finds at each depth is not on
    the path to the restored state (a VIEW of the place alone: 12 states, no match)."""
    job = Job(tmp_path, pods(3))
    job.all_join()
    monkeypatch.setattr(StatusJournal, "_write_steplog", _saved_never_logged)
    seq = int(job.core.state.masterSeq)
    for p in job.pods:
        kind = MessageType.ERROR if p == job.pods[1] else MessageType.FINISH
        job.publish(job.core.on_report(message(p, kind, job.incarnation[p], seq)))
    monkeypatch.undo()
    job.restart_controller()
    job.close()
    v = validate_log(job.steplog)
    assert v.matched and v.resumes == 1 and v.unlogged_steps == 6
    assert v.distinct_states is not None and v.distinct_states > 100


def _saved_never_logged(self: StatusJournal) -> None:
    """StatusJournal._write_steplog of a controller killed before it logs its saved steps."""
    self._unlogged = []


def test_a_gap_that_does_not_lead_to_the_restored_state_is_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _killed_between_save_and_log(tmp_path, monkeypatch)
    restore = journal.restore

    def shifted(*args: Any) -> Any:
        # a state that satisfies every invariant (the engine refuses to start from one that
        # does not) but that no few steps of the spec reach from the logged one
        r = restore(*args)
        assert r is not None
        return dataclasses.replace(
            r, state=dataclasses.replace(r.state, recoverCount=2, countedFailures=2)
        )

    monkeypatch.setattr(journal, "restore", shifted)
    job.restart_controller()
    job.close()
    with pytest.raises(TraceMismatch, match="not a state the spec reaches"):
        check_steplog(job.steplog)
    v = validate_log(job.steplog)
    assert not v.matched and v.first_mismatch is not None
    assert v.first_mismatch.action == "(resume)"
    assert "no 4 steps of the spec lead from step" in v.first_mismatch.reason


# ---------------- a report of a replaced incarnation ----------------


def test_a_report_of_a_replaced_incarnation_is_rejected_naming_the_replacement(
    tmp_path: Path,
) -> None:
    """A controller that took a report its sender's previous incarnation sent before the pod
    restarted: validate-log says the sender's incarnation was replaced, and where."""
    c = runtime_constants(pods(2), 3)
    path = tmp_path / "steps.jsonl"
    log = StepLog(path)
    engine = Engine(c, on_step=log.write)
    log.write_initial(c, initial_state(c))
    w0, w1 = (ModelValue(p) for p in pods(2))
    for w in (w0, w1):
        engine.observe(Label.agentJoin, w=w)
    engine.settle()  # BootChecking
    assert engine.state.phase == "BootChecking"
    engine.observe(Label.agentWork, w=w1, outcome="Finish")  # in flight when w1 restarts
    stale = spec_report(w1, "Finish", int(engine.state.masterSeq))
    engine.observe(Label.envPodRestart, w=w1)
    replaced_at = engine.seq_no
    engine.settle()  # restartOutsideRun: the old incarnation's reports are dropped
    engine.observe(Label.agentJoin, w=w1)
    engine.settle()
    log.close()
    # the bug: the old incarnation's Finish is taken as the new one's
    bogus = {
        "seq_no": engine.seq_no + 1,
        "action": "receive",
        "process": encode(Label.receive.value),
        "choices": [["m", encode(stale)]],
        "changed": {"msgs": {"plus": [], "minus": [encode(stale)]}},
    }
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(bogus) + "\n")
    v = validate_log(path)
    assert not v.matched and v.first_mismatch is not None
    m = v.first_mismatch
    assert m.action == "receive" and m.seq_no == engine.seq_no + 1
    assert f"an incarnation of {pods(2)[1]} that step {replaced_at} (envPodRestart" in m.reason
    assert "ReplacedIncarnationIgnored" in m.reason


@pytest.mark.slow  # a TLC run; the explanation's other side is checked in CI above
def test_a_report_sent_again_by_the_new_incarnation_is_not_called_stale(tmp_path: Path) -> None:
    """The explanation names a replacement only when the report was in flight across it."""
    c = runtime_constants(pods(2), 3)
    path = tmp_path / "steps.jsonl"
    log = StepLog(path)
    engine = Engine(c, on_step=log.write)
    log.write_initial(c, initial_state(c))
    w0, w1 = (ModelValue(p) for p in pods(2))
    for w in (w0, w1):
        engine.observe(Label.agentJoin, w=w)
    engine.settle()
    engine.observe(Label.envPodRestart, w=w1)  # restarted before it reported anything
    engine.settle()
    engine.observe(Label.agentJoin, w=w1)
    engine.settle()
    log.close()
    never_sent = spec_report(w1, "Finish", int(engine.state.masterSeq))
    bogus = {
        "seq_no": engine.seq_no + 1,
        "action": "receive",
        "process": encode(Label.receive.value),
        "choices": [["m", encode(never_sent)]],
        "changed": {"msgs": {"plus": [], "minus": [encode(never_sent)]}},
    }
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(bogus) + "\n")
    v = validate_log(path)
    assert not v.matched and v.first_mismatch is not None
    assert v.first_mismatch.action == "receive"
    assert "replaced" not in v.first_mismatch.reason
