"""The Job Controller's pod cache: a list, a watch, and the controller's own writes."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.k8s.model import PodView
from aegis.k8s.pod_cache import PodCache
from aegis.k8s.resources import LABEL_JOB

NS, JOB, OWNER = "team", "train", "j1"


def pod(name: str, uid: str, phase: str = "Pending", **meta: Any) -> dict[str, Any]:
    """A worker pod whose node names its incarnation (so a view says which one it is)."""
    return {
        "metadata": {"name": name, "namespace": NS, "uid": uid, "labels": {LABEL_JOB: JOB},
                     "ownerReferences": [{"uid": OWNER}], **meta},
        "spec": {"nodeName": f"node-{uid}", "containers": [{"name": "trainer"}]},
        "status": {"phase": phase},
    }  # fmt: skip


def views(cache: PodCache) -> dict[str, PodView]:
    return {v.name: v for v in cache.pods(NS, JOB, OWNER)}


def test_a_list_fills_it_and_says_which_jobs_moved() -> None:
    cache = PodCache()
    assert not cache.synced
    assert cache.replace([pod("w-0", "a"), pod("w-1", "b")]) == {(NS, JOB)}
    assert cache.synced
    assert [(v.name, v.node) for v in cache.pods(NS, JOB, OWNER)] == [
        ("w-0", "node-a"),
        ("w-1", "node-b"),
    ]
    assert cache.pods(NS, JOB, "another-owner") == []
    assert cache.pods("other-ns", JOB, OWNER) == []
    assert cache.replace([pod("w-0", "a"), pod("w-1", "b")]) == set()  # nothing new
    assert cache.replace([pod("w-0", "a")]) == {(NS, JOB)}  # w-1 went
    assert list(views(cache)) == ["w-0"]


def test_a_watch_event_reconciles_only_what_a_reconcile_reads() -> None:
    cache = PodCache()
    cache.replace([])
    ready = pod("w-0", "a", "Running")
    ready["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert cache.apply("ADDED", pod("w-0", "a")) == (NS, JOB)
    assert cache.apply("MODIFIED", pod("w-0", "a")) is None
    assert cache.apply("MODIFIED", pod("w-0", "a", "Running")) == (NS, JOB)
    assert cache.apply("MODIFIED", ready) is None  # conditions: not read by a reconcile
    assert cache.apply("BOOKMARK", {"metadata": {"resourceVersion": "9"}}) is None
    assert cache.apply("DELETED", pod("w-0", "a", "Running")) == (NS, JOB)
    assert views(cache) == {}


def test_its_own_create_is_present_before_the_watch_shows_it() -> None:
    cache = PodCache()
    cache.replace([])
    cache.created(pod("w-0", "a"))
    assert views(cache)["w-0"].node == "node-a"
    cache.apply("ADDED", pod("w-0", "a"))
    cache.apply("MODIFIED", pod("w-0", "a", "Running"))
    assert views(cache)["w-0"].phase == "Running"  # the watch's, once it has it
    cache.apply("DELETED", pod("w-0", "a", "Running"))
    assert views(cache) == {}  # the created mark went with the watch's sight of it


def test_a_create_answer_after_the_watch_saw_the_pod_gone_brings_nothing_back() -> None:
    cache = PodCache()
    cache.replace([])
    cache.apply("ADDED", pod("w-0", "a"))
    cache.apply("DELETED", pod("w-0", "a"))
    cache.created(pod("w-0", "a"))
    assert views(cache) == {}


def test_a_create_answer_behind_a_list_that_passed_it_brings_nothing_back() -> None:
    """Created, evicted, and a list (version 2) taken before the answer came: the list is
    the truth, whichever of the answer and the list comes first."""
    made = pod("w-0", "a", resourceVersion="1")
    for first_the_answer in (False, True):
        cache = PodCache()
        cache.replace([], "0")
        if first_the_answer:
            cache.created(made)
        cache.replace([], "2")
        if not first_the_answer:
            cache.created(made)
        assert views(cache) == {}, first_the_answer
        cache.created(pod("w-0", "b", resourceVersion="3"))  # a newer one: present
        assert views(cache)["w-0"].node == "node-b"


def test_its_own_delete_reads_as_deleting_until_the_watch_says_gone() -> None:
    """The failed pod it deleted must not read as failed again (a second restart counted)
    when older events of it, or a list taken before the deletion, come after."""
    cache = PodCache()
    failed = pod("w-0", "a", "Failed")
    cache.replace([failed])
    cache.deleted(NS, "w-0")
    assert views(cache)["w-0"].deleting
    cache.apply("MODIFIED", failed)
    cache.replace([failed])
    assert views(cache)["w-0"].deleting
    cache.apply("DELETED", failed)
    assert views(cache) == {}
    cache.apply("ADDED", pod("w-0", "b"))  # the replacement, under the same name
    assert not views(cache)["w-0"].deleting


def test_the_old_pods_deletion_does_not_take_its_replacement() -> None:
    cache = PodCache()
    cache.replace([])
    cache.apply("ADDED", pod("w-0", "b"))
    assert cache.apply("DELETED", pod("w-0", "a")) is None
    assert views(cache)["w-0"].node == "node-b"


def test_its_marks_end_after_their_time() -> None:
    now = [0.0]
    cache = PodCache(ttl_s=300.0, clock=lambda: now[0])
    failed = pod("w-0", "a", "Failed")
    cache.replace([failed])
    cache.deleted(NS, "w-0")
    cache.created(pod("w-1", "b"))
    assert sorted(views(cache)) == ["w-0", "w-1"] and views(cache)["w-0"].deleting
    now[0] = 301.0  # the watch never said: the cache believes the list and the watch again
    assert list(views(cache)) == ["w-0"] and not views(cache)["w-0"].deleting


# ---- random histories of an API server, its watch, and the controller's own calls ----


@dataclass
class World:
    """An API server's worker pods, the events it sent, and where the informer is."""

    cache: PodCache = field(default_factory=PodCache)
    server: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (uid, phase)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delivered: int = 0
    listing: dict[str, tuple[str, str]] | None = None  # a list taken, not yet in the cache
    answers: list[tuple[str, Any]] = field(default_factory=list)  # calls made, not returned
    ours_deleted: set[str] = field(default_factory=set)
    ours_created: set[str] = field(default_factory=set)
    uids: itertools.count[int] = field(default_factory=itertools.count)

    def change(self, kind: str, name: str, uid: str, phase: str) -> dict[str, Any]:
        obj = pod(name, uid, phase, resourceVersion=str(len(self.events) + 1))
        if kind == "DELETED":
            del self.server[name]
        else:
            self.server[name] = (uid, phase)
        self.events.append((kind, obj))
        return obj

    def step(self, op: str, name: str) -> None:
        held = self.server.get(name)
        if op == "create" and held is None and not self.answers:
            uid = f"u{next(self.uids)}"
            self.answers.append(("created", self.change("ADDED", name, uid, "Pending")))
            self.ours_created.add(uid)
        elif op == "delete" and held is not None and not self.answers:
            self.change("DELETED", name, *held)
            self.answers.append(("deleted", name))
            self.ours_deleted.add(held[0])
        elif op in ("run", "fail") and held is not None:
            self.change("MODIFIED", name, held[0], "Running" if op == "run" else "Failed")
        elif op == "evict" and held is not None:
            self.change("DELETED", name, *held)
        elif op == "answer" and self.answers:
            verb, arg = self.answers.pop(0)
            self.cache.created(arg) if verb == "created" else self.cache.deleted(NS, arg)
        elif op == "deliver" and self.listing is None and self.delivered < len(self.events):
            self.cache.apply(*self.events[self.delivered])
            self.delivered += 1
        elif op == "list" and self.listing is None:
            self.listing, self.delivered = dict(self.server), len(self.events)
        elif op == "listed" and self.listing is not None:
            listed = (pod(n, uid, phase) for n, (uid, phase) in self.listing.items())
            self.cache.replace(listed, str(self.delivered))
            self.listing = None

    def check(self) -> None:
        """What a reconcile may rely on, whenever its calls have returned."""
        if self.answers:
            return
        seen = views(self.cache)
        by_uid = {v.node.removeprefix("node-"): v for v in seen.values()}
        for uid in self.ours_deleted:  # never live again: a restart counted once
            assert uid not in by_uid or by_uid[uid].deleting, uid
        for name, (uid, _) in self.server.items():  # never missing: no create twice
            if uid in self.ours_created and uid not in self.ours_deleted:
                assert name in seen, name
        if self.listing is None and self.delivered == len(self.events):
            assert {n: (v.node, v.phase, v.deleting) for n, v in seen.items()} == {
                n: (f"node-{uid}", phase, False) for n, (uid, phase) in self.server.items()
            }


OPS = st.sampled_from(
    ["create", "delete", "run", "fail", "evict", "answer", "deliver", "deliver", "list", "listed"]
)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.tuples(OPS, st.sampled_from(["w-0", "w-1"])), max_size=60))
def test_any_history_keeps_what_a_reconcile_relies_on(history: list[tuple[str, str]]) -> None:
    """Whatever the order of the server's changes, the watch's delivery of them, lists, and
    the answers to the controller's own creates and deletes: a pod it deleted never reads as
    live again, a pod it created and still exists never reads as missing, and once the
    watch has delivered everything the cache is the server's state."""
    world = World()
    world.cache.replace([])
    for op, name in history:
        world.step(op, name)
        world.check()
    for op in ["answer"] * len(world.answers) + ["listed"]:
        world.step(op, "w-0")
    while world.delivered < len(world.events):
        world.step("deliver", "w-0")
    world.check()
