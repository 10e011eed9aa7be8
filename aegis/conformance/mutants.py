"""Mutants of the generated code: one small patch each, applied to a private copy.

A patch names the generated file and the top-level function it edits, and the text to
replace there (whitespace-insensitive; it must occur exactly once in that function, or
MutantError: a mutant never silently does nothing). The copy is imported under another
package name, so the committed module is untouched.
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from aegis.errors import AegisError


class MutantError(AegisError):
    """A mutant's patch does not apply to the generated code (update the mutant)."""


@dataclass(frozen=True)
class Mutant:
    """Replace `old` by `new` in function `function` of generated file `file`.py."""

    name: str
    file: str
    function: str
    old: str
    new: str
    why: str


def _m(name: str, file: str, function: str, old: str, new: str, why: str) -> Mutant:
    return Mutant(name, file, function, old, new, why)


_RC = "recoverCount_next = Min(c, s.recoverCount + 1, c.MaxRetry)"
MUTANTS: tuple[Mutant, ...] = (
    _m(
        "restartInRun_no_min_cap",
        "actions",
        "_steps_restartInRun",
        _RC,
        "recoverCount_next = s.recoverCount + 1",
        "count_failure without the Min cap",
    ),
    _m(
        "receive_error_no_min_cap",
        "actions",
        "_steps_receive",
        _RC,
        "recoverCount_next = s.recoverCount + 1",
        "Error report counted without the Min cap",
    ),
    _m(
        "restartInRun_retry_plus_two",
        "actions",
        "_steps_restartInRun",
        "apply(s.retries, w) + 1",
        "apply(s.retries, w) + 2",
        "off-by-one retry increment",
    ),
    _m(
        "receive_error_retry_plus_two",
        "actions",
        "_steps_receive",
        'apply(s.retries, apply(m, "from")) + 1',
        'apply(s.retries, apply(m, "from")) + 2',
        "off-by-one retry increment on an Error report",
    ),
    _m(
        "advance_finished_not_reset",
        "actions",
        "_steps_advance",
        "finished_next = _tla.const_fn(c.Workers, lambda: False)",
        "finished_next = s.finished",
        "finished[w] not reset when a phase begins",
    ),
    _m(
        "advance_seq_plus_two",
        "actions",
        "_steps_advance",
        "masterSeq_next = s.masterSeq + 1",
        "masterSeq_next = s.masterSeq + 2",
        "wrong seq increment for a new order",
    ),
    _m(
        "restartDone_seq_kept",
        "actions",
        "_steps_restartDone",
        "masterSeq_next = s.masterSeq + 1",
        "masterSeq_next = s.masterSeq",
        "troubleshoot order sent without a new seq",
    ),
    _m(
        "restartInRun_finished_kept",
        "actions",
        "_steps_restartInRun",
        "finished_next = _tla.except_value(s.finished, (w,), False)",
        "finished_next = s.finished",
        "EXCEPT ![w] dropped: finished[w] not reset",
    ),
    _m(
        "restartInRun_msgs_kept",
        "actions",
        "_steps_restartInRun",
        'msgs_next = frozenset(m for m in s.msgs if apply(m, "from") != w)',
        "msgs_next = s.msgs",
        "a restarted pod's messages not discarded",
    ),
    _m(
        "receive_lastFinishSeq_kept",
        "actions",
        "_steps_receive",
        's.lastFinishSeq, (apply(m, "from"),), apply(m, "seq")',
        's.lastFinishSeq, (apply(m, "from"),), apply(s.lastFinishSeq, apply(m, "from"))',
        "lastFinishSeq not advanced by a fresh Finish",
    ),
    _m(
        "agentWork_seq_plus_one",
        "actions",
        "_steps_agentWork",
        '"seq": s.masterSeq',
        '"seq": s.masterSeq + 1',
        "report carries the wrong seq",
    ),
    _m(
        "failedWrapUp_count",
        "actions",
        "_steps_failedWrapUp",
        "recoverCount_next = c.MaxRetry + 1",
        "recoverCount_next = c.MaxRetry",
        "wrap-up does not mark retries exhausted",
    ),
    _m(
        "alignRetries_plus_one",
        "actions",
        "_steps_alignRetries",
        "_tla.const_fn(c.Workers, lambda: s.recoverCount)",
        "_tla.const_fn(c.Workers, lambda: s.recoverCount + 1)",
        "retries aligned one too high",
    ),
    _m(
        "reschedule_agentSeq_kept",
        "actions",
        "_steps_reschedule",
        "agentSeq_next = _tla.except_value(s.agentSeq, (w,), c.InitSeqNum)",
        "agentSeq_next = s.agentSeq",
        "EXCEPT dropped: a rescheduled agent keeps its seq",
    ),
    _m(
        "envPodRestart_free",
        "actions",
        "_steps_envPodRestart",
        "faults_next = s.faults - 1",
        "faults_next = s.faults",
        "a pod restart costs no fault",
    ),
    _m(
        "init_faults_minus_one",
        "actions",
        "_init",
        "faults = c.FaultBudget",
        "faults = c.FaultBudget - 1",
        "wrong initial state",
    ),
    _m(
        "NextPhase_swapped",
        "defs",
        "NextPhase",
        '"BootChecking" if p == "Pending" else "RunCommand" if p == "BootChecking"',
        '"RunCommand" if p == "Pending" else "BootChecking" if p == "BootChecking"',
        "two phases swapped in NextPhase",
    ),
    _m(
        "CanAdvance_no_exhausted_guard",
        "defs",
        "CanAdvance",
        'and not ( s.phase == "Troubleshooting" and Exhausted(c, s) )',
        "",
        "guard conjunct dropped: advance out of Troubleshooting when exhausted",
    ),
    _m(
        "CanAdvance_flipped",
        "defs",
        "CanAdvance",
        "s.phase in AdvancePhases(c)",
        "s.phase not in AdvancePhases(c)",
        "guard flipped",
    ),
    _m(
        "Quiescent_no_align",
        "defs",
        "Quiescent",
        "or CanAlign(c, s)",
        "",
        "Quiescent ignores a pending retries alignment",
    ),
    _m(
        "FreshFinish_no_seq",
        "defs",
        "FreshFinish",
        'apply(m, "seq") == s.masterSeq and',
        "",
        "a stale Finish is accepted",
    ),
    _m(
        "FreshFinish_ge",
        "defs",
        "FreshFinish",
        'apply(m, "seq") > apply(',
        'apply(m, "seq") >= apply(',
        "a duplicate Finish is accepted",
    ),
    # (Dropping `~podRestarted[w]` from AllReady is an equivalent mutant: a restart is seen
    # before all workers can be finished, since observations wait for Quiescent.)
    _m(
        "CanRestartDone_any",
        "defs",
        "CanRestartDone",
        "_tla.forall(",
        "_tla.exists(",
        "Restarting ends before every pod is back",
    ),
    _m(
        "Terminated_no_count",
        "defs",
        "Terminated",
        "and s.recoverCount == c.MaxRetry + 1",
        "",
        "job done before the wrap-up",
    ),
    _m(
        "Outcomes_ge",
        "defs",
        "Outcomes",
        "s.faults > 0",
        "s.faults >= 0",
        "an Error report without fault budget",
    ),
    _m(
        "SeqBound_lt",
        "defs",
        "SeqBound",
        "s.masterSeq <= c.InitSeqNum",
        "s.masterSeq < c.InitSeqNum",
        "the state constraint cuts one seq too early",
    ),
    _m(
        "RecoverCountBound_lt",
        "defs",
        "RecoverCountBound",
        "s.recoverCount <= c.MaxRetry + 1",
        "s.recoverCount < c.MaxRetry + 1",
        "invariant strengthened (false on reachable states)",
    ),
    _m(
        "RecoverCountBound_plus_two",
        "defs",
        "RecoverCountBound",
        "s.recoverCount <= c.MaxRetry + 1",
        "s.recoverCount <= c.MaxRetry + 2",
        "invariant weakened (true on every reachable state)",
    ),
    _m(
        "RecoverCountBound_no_phase",
        "defs",
        "RecoverCountBound",
        'and ( s.phase == "Failed" or s.recoverCount <= c.MaxRetry )',
        "",
        "invariant weakened: conjunct dropped",
    ),
    _m(
        "RetriesBound_plus_two",
        "defs",
        "RetriesBound",
        "<= c.MaxRetry + 1",
        "<= c.MaxRetry + 2",
        "invariant weakened",
    ),
    _m(
        "NoFinishDoubleProcessed_two",
        "defs",
        "NoFinishDoubleProcessed",
        "<= 1",
        "<= 2",
        "invariant weakened",
    ),
    _m(
        "WorkerSeqNumBound_no_msgs",
        "defs",
        "WorkerSeqNumBound",
        'and all(apply(m, "seq") <= s.masterSeq for m in s.msgs)',
        "",
        "invariant weakened: conjunct dropped",
    ),
    _m(
        "PhaseConsistency_any_run",
        "defs",
        "PhaseConsistency",
        's.phase == "Restarting" and',
        "",
        "invariant weakened",
    ),
    _m(
        "MasterSeqNumMonotonic_plus_one",
        "defs",
        "MasterSeqNumMonotonic",
        "s.prevMasterSeq <= s.masterSeq",
        "s.prevMasterSeq <= s.masterSeq + 1",
        "invariant weakened",
    ),
    _m(
        "ValidInnerPhase_alien",
        "defs",
        "ValidInnerPhase",
        "in Phases(c)",
        'in Phases(c) | {"ConformAlien"}',
        "invariant weakened: an unknown phase accepted",
    ),
    # ---- the slow-node path ----
    # (Dropping `Evicting # {}` from receive's Checkpoint branch is an equivalent mutant: a
    # Checkpoint report exists only while an eviction waits, and every step that empties
    # Evicting also leaves RunCommand or starts a new order.)
    _m(
        "CanHangWithQuit_no_budget",
        "defs",
        "CanHangWithQuit",
        "and s.recoverCount + len(Evicting(c, s)) < c.MaxRetry",
        "",
        "evicts a slow pod although the job has no retry left for it",
    ),
    _m(
        "agentEvict_no_checkpoint",
        "actions",
        "_steps_agentEvict",
        'and s.phase == "RunCommand" and s.checkpointed',
        'and s.phase == "RunCommand"',
        "a slow pod leaves before the checkpoint",
    ),
    _m(
        "evictSlow_not_counted",
        "actions",
        "_steps_evictSlow",
        _RC,
        "recoverCount_next = s.recoverCount",
        "an eviction costs no retry",
    ),
    _m(
        "agentHang_when_marked",
        "actions",
        "_steps_agentHang",
        "and not apply(s.slow, w)",
        "",
        "an agent already marked slow reports Hang again",
    ),
)

# The subset CI runs (tests/conformance): one per kind of fault.
FAST: tuple[str, ...] = (
    "restartInRun_no_min_cap",
    "advance_finished_not_reset",
    "NextPhase_swapped",
    "CanAdvance_no_exhausted_guard",
    "RecoverCountBound_plus_two",
    "agentEvict_no_checkpoint",
)


def by_name(name: str) -> Mutant:
    """The mutant called `name`."""
    for m in MUTANTS:
        if m.name == name:
            return m
    raise MutantError(f"no mutant named {name!r}")


def _pattern(old: str) -> re.Pattern[str]:
    """`old` as a regex: any whitespace between tokens, and the generator's numbered bound
    variables (`w_2`) matching any number, so that a spec change elsewhere does not break it."""

    def token(tok: str) -> str:
        bound = _BOUND.fullmatch(tok)
        return re.escape(bound.group(1)) + r"_\d+" if bound else re.escape(tok)

    return re.compile(r"\s*".join(token(tok) for tok in re.findall(r"\w+|\S", old)))


_BOUND = re.compile(r"([a-z][a-z0-9]*)_\d+")


def patch(source: str, mutant: Mutant) -> str:
    """The source with the mutant applied; MutantError unless `old` occurs once in the function."""
    tree = ast.parse(source)
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == mutant.function]
    if len(fns) != 1:
        raise MutantError(f"{mutant.name}: {mutant.file}.py has no function {mutant.function}")
    lines = source.splitlines(keepends=True)
    start = sum(len(x) for x in lines[: fns[0].lineno - 1])
    end = sum(len(x) for x in lines[: fns[0].end_lineno])
    found = list(_pattern(mutant.old).finditer(source, start, end))
    if len(found) != 1:
        raise MutantError(
            f"{mutant.name}: {mutant.old!r} occurs {len(found)} times in {mutant.function}"
        )
    m = found[0]
    patched = source[: m.start()] + mutant.new + source[m.end() :]
    ast.parse(patched)  # a mutant must still be valid Python
    return patched


_SEQ = itertools.count()


@contextmanager
def mutated(package: ModuleType, mutant: Mutant) -> Iterator[ModuleType]:
    """A private copy of the generated package with the mutant applied, imported anew."""
    src = Path(package.__file__ or "").parent
    name = f"_aegis_mutant_{next(_SEQ)}_{mutant.name}"
    with tempfile.TemporaryDirectory(prefix="aegis-mutant-") as tmp:
        dst = Path(tmp) / name
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        target = dst / f"{mutant.file}.py"
        target.write_text(patch(target.read_text(encoding="utf-8"), mutant), encoding="utf-8")
        try:
            yield _import(name, dst)
        finally:
            for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                del sys.modules[mod]


def _import(name: str, path: Path) -> ModuleType:
    """Import the package in `path` as `name`."""
    spec = importlib.util.spec_from_file_location(
        name, path / "__init__.py", submodule_search_locations=[str(path)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
