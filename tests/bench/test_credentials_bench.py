"""bench/credentials.py run as a program at a tiny size: every agent gets its credential each
way, each pod checked once against the fake API or, with the pod cache, not at all (what the
figures mean, not how fast anything is)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_both_ways_issue_every_credential_after_one_api_check_each() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "credentials.py"), "--json", "--agents", "12",
         "--latency-ms", "0", "2"],
        capture_output=True, text=True, timeout=240, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["agents"] == 12 and set(out["by_latency_ms"]) == {"0", "2"}
    for figures in out["by_latency_ms"].values():
        for way in ("loop", "threads", "process", "cached"):
            assert figures[way]["s"] > 0 and figures[way]["per_s"] > 0
        # a GET per agent, but none where the pod cache's list and watch showed every pod
        assert [figures[w]["pod_gets"] for w in ("loop", "process", "cached")] == [12, 12, 0]
        # the process way leaves the controller's own process (nearly) idle
        assert (
            figures["process"]["controller_cpu_ms_per_credential"]
            < figures["loop"]["controller_cpu_ms_per_credential"]
        )


def test_a_bad_argument_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "credentials.py"), "--agents", "0"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2 and "--agents must be >= 1" in done.stderr
