"""Fixtures for the code generator's tests: generate each fixture spec once per session."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from aegis.conformance.compare import Report
from aegis.conformance.session import baseline, conform
from codegen.pipeline import Generated, generate, load, write

FIXTURES = Path(__file__).parent / "fixtures"


class Built:
    """A fixture spec generated into a temp dir and imported."""

    def __init__(self, gen: Generated, out: Path, module: ModuleType) -> None:
        self.gen, self.out, self.module = gen, out, module


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """tests/codegen/fixtures: the fixture specs and their models."""
    return FIXTURES


@pytest.fixture(scope="session")
def build(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Built]:
    """build("Jobs") → the generated package of fixtures/Jobs.tla (cached per session)."""
    cache: dict[str, Built] = {}

    def get(name: str) -> Built:
        if name not in cache:
            gen = generate(FIXTURES / f"{name}.tla")
            out = tmp_path_factory.mktemp(f"gen-{name}")
            write(gen, out)
            cache[name] = Built(gen, out, load(out, gen.package))
        return cache[name]

    return get


@pytest.fixture(scope="session")
def explorer() -> Callable[..., tuple[set, set]]:
    """The breadth-first explorer below, for tests."""
    return explore


def explore(m: ModuleType, constants: object = None) -> tuple[set, set]:
    """Reachable states and (state, label, state) edges of a generated module, as TLC finds
    them: states outside the CONSTRAINTs are dropped."""
    c = constants if constants is not None else m.CFG_CONSTANTS
    init = [s for s in m.initial_states(c) if m.within_constraints(c, s)]
    seen = set(init)
    edges = set()
    queue = deque(init)
    while queue:
        s = queue.popleft()
        for label, _pid, succ in m.next_states(c, s):
            if not m.within_constraints(c, succ.state):
                continue
            edges.add((s, label, succ.state))
            if succ.state not in seen:
                seen.add(succ.state)
                queue.append(succ.state)
    return seen, edges


def conform_with_tlc(spec: Path, out: Path, cfg: Path | None = None) -> Report:
    """Generate `spec` into `out`, import it, and compare its state graph (and the probes'
    invariant verdicts) with TLC's, through the conformance machinery."""
    gen = generate(spec, cfg, phase_variable=None)
    write(gen, out)
    base = baseline(spec, cfg, package=load(out, gen.package))
    return conform(base)


@pytest.fixture(scope="session")
def conforms() -> Callable[..., Report]:
    """conform_with_tlc, for tests."""
    return conform_with_tlc


Build = Callable[[str], Built]  # the `build` fixture, for annotations
Explorer = Callable[..., tuple[set, set]]  # the `explorer` fixture
