"""What the controller knows of the pods' checkpoints, and the two decisions made from it.

Every report and heartbeat of an agent says what its store holds (CheckpointInfo); the book
keeps the newest of each pod's current incarnation (by its `seq`, so a late heartbeat cannot
roll it back) and forgets a pod that is lost. From that:

- **the restart point** (`restore_point`): when a RunCommand order is made, the newest step
  every pod holds in memory, or, if the newest step complete on disk is newer (or a pod holds
  nothing, e.g. it was rescheduled), that one; None on a fresh job. It is fixed for that
  order (agents that rejoin it get the same), and goes out in it (`Order.restore`).
- **a complete step releases an eviction** (`checkpoint_completes`): while an eviction waits,
  agents send Checkpoint reports with the newest step all their ranks saved (each only a step
  saved after it saw the decision). The report that makes a step saved by every pod is the
  spec's agentCheckpoint; earlier ones only note their step. A Checkpoint of step -1 is the
  marker file (`--checkpoint-file`), which the training touches for a whole checkpoint; one
  without a step says the same.

None of this is the spec's state: a controller that restarts starts with an empty book (the
next restart then comes from disk, until the agents' heartbeats have refilled it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from aegis.protocol.errors import MalformedMessage
from aegis.protocol.payloads import CheckpointInfo, RestorePoint

MARKER = -1  # a Checkpoint report of the marker file: complete by the training's word


class CheckpointBook:
    """Per pod, what its agent's store holds; the restart point of each RunCommand order."""

    def __init__(self, pods: Iterable[str]) -> None:
        self.pods = tuple(pods)
        self.infos: dict[str, CheckpointInfo] = {}
        self.malformed = 0
        self.incomplete_reports = 0  # Checkpoint reports of a step not every pod saved yet
        self._restore: tuple[int, RestorePoint | None] | None = None  # (masterSeq, point)
        self._saved: tuple[int, dict[str, int]] = (-1, {})  # (masterSeq, pod -> step)

    def note(self, pod: str, data: Any) -> None:
        """A report's or heartbeat's `checkpoint` object (raw; a bad one is counted, dropped)."""
        if data is None:
            return
        old = self.infos.get(pod)
        if old is not None and isinstance(data, dict) and data.get("seq") == old.seq:
            return  # nothing changed since (most heartbeats): not parsed again
        try:
            info = data if isinstance(data, CheckpointInfo) else CheckpointInfo.from_data(data)
        except MalformedMessage:
            self.malformed += 1
            return
        if old is None or info.seq >= old.seq:
            self.infos[pod] = info

    def forget(self, pod: str) -> None:
        """Pod `pod`'s incarnation is gone: what it held is gone with it."""
        self.infos.pop(pod, None)

    def restore_point(self, master_seq: int, phase: str) -> RestorePoint | None:
        """The restart point of the RunCommand order `master_seq` (fixed once made)."""
        if phase != "RunCommand":
            return None
        if self._restore is not None and self._restore[0] == master_seq:
            return self._restore[1]
        point = self._choose()
        self._restore = (master_seq, point)
        return point

    def _choose(self) -> RestorePoint | None:
        infos = [self.infos.get(p) for p in self.pods]
        memory = None
        if all(i is not None for i in infos):
            common = set.intersection(*(set(i.held) for i in infos if i is not None))
            memory = max(common) if common else None
        disk = max((i.disk for i in infos if i is not None and i.disk is not None), default=None)
        if memory is not None and (disk is None or memory >= disk):
            return RestorePoint(memory, "memory")
        if disk is not None:
            return RestorePoint(disk, "disk")
        return None

    def complete_step(self) -> int | None:
        """The newest step every pod saved, as their agents last said."""
        saved = [self.infos[p].saved if p in self.infos else None for p in self.pods]
        return None if any(s is None for s in saved) else min(s for s in saved if s is not None)

    def checkpoint_completes(self, pod: str, master_seq: int, step: int | None) -> bool:
        """Whether pod `pod`'s Checkpoint report of `step` (in order `master_seq`) makes a step
        saved by every pod since the eviction was decided (the marker: always)."""
        if step is None or step == MARKER:  # the training's word: a whole checkpoint
            return True
        if step < 0:
            return False
        seq, saved = self._saved
        if seq != master_seq:
            saved = {}
            self._saved = (master_seq, saved)
        saved[pod] = max(step, saved.get(pod, step))
        return all(p in saved for p in self.pods)

    def incomplete(self, pod: str, master_seq: int, step: int | None) -> bool:
        """`not checkpoint_completes(...)`, counted: the report is no safe point (yet)."""
        if self.checkpoint_completes(pod, master_seq, step):
            return False
        self.incomplete_reports += 1
        return True

    def status(self) -> dict[str, Any]:
        """`aegis ctl status`'s `checkpoints` object."""
        pods: dict[str, Mapping[str, Any]] = {}
        for pod, info in self.infos.items():
            pods[pod] = {
                "held": list(info.held),
                "saved": info.saved,
                "disk": info.disk,
                "shmBytes": info.shm_bytes,
                **({"persistError": info.persist_error} if info.persist_error else {}),
            }
        point = self._restore[1] if self._restore is not None else None
        return {
            "completeStep": self.complete_step(),
            "restoredFrom": None if point is None else point.to_data(),
            "shmBytes": sum(i.shm_bytes for i in self.infos.values()),
            "incompleteReports": self.incomplete_reports,
            "pods": pods,
        }


class CheckpointMetrics:
    """The book as Prometheus gauges (a collector: read when the metrics are)."""

    def __init__(self, book: CheckpointBook, job: str) -> None:
        self.book = book
        self.job = job

    def collect(self) -> Iterator[Metric]:
        """The Prometheus collector protocol."""
        shm = GaugeMetricFamily(
            "aegis_checkpoint_shm_bytes",
            "Shared memory the pod's agent holds checkpoint versions in.",
            labels=("job", "pod"),
        )
        disk = GaugeMetricFamily(
            "aegis_checkpoint_persisted_step",
            "The newest step complete on disk, as the pod's agent last saw it.",
            labels=("job", "pod"),
        )
        for pod, info in sorted(self.book.infos.items()):
            shm.add_metric((self.job, pod), info.shm_bytes)
            if info.disk is not None:
                disk.add_metric((self.job, pod), info.disk)
        yield shm
        yield disk
        complete = self.book.complete_step()
        step = GaugeMetricFamily(
            "aegis_checkpoint_complete_step",
            "The newest step every pod saved (-1: none yet).",
            labels=("job",),
        )
        step.add_metric((self.job,), -1 if complete is None else complete)
        yield step
