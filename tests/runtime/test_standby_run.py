"""`aegis run --standby/--preload` end to end: every rank's first attempt runs in the
interpreter its agent started when it started, and after a crash every rank's next attempt
runs in one started ahead (a process older than the crash; with the preload imported when its
standby got to it: in the idle scheduling class, else once a core is idle), the job succeeds
as a cold restart would, and no standby outlives the job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..support import AEGIS, Launch, alone_agent_env

CRASH_ONCE = """\
import os, sys, time
warm = "{marker}" in sys.modules  # the first line: only a standby has imported it
rank, attempt = os.environ["RANK"], os.environ["TORCHELASTIC_RESTART_COUNT"]
seen = os.environ["SEEN_DIR"]
with open("/proc/self/stat") as f:  # when this process started, in ticks since boot
    started = f.read().rpartition(")")[2].split()[19]
with open("/proc/self/cmdline", "rb") as f:  # a standby was started as `python -c ...`
    standby = os.path.basename(__file__).encode() not in f.read()
with open(os.path.join(seen, f"{{attempt}}-{{rank}}"), "w") as f:
    f.write(f"{{int(warm)}} {{os.getpid()}} {{started}} {{int(standby)}}")


def next_preloaded():
    # preloads by standbys other than the first attempt's (or after 30 s: a standby
    # preloads only on CPU time nothing else wants)
    first = [os.path.join(seen, f"0-{{r}}") for r in range(4)]
    if not all(os.path.exists(p) for p in first):
        return 0
    pids = {{open(p).read().split()[1] for p in first}}
    return sum(n.startswith("pre-") and n[4:] not in pids for n in os.listdir(seen))


if (rank, attempt) == ("1", "0"):  # crash once the next attempt's 4 standbys have preloaded
    deadline = time.time() + 30
    while next_preloaded() < 4 and time.time() < deadline:
        time.sleep(0.05)
    with open("/proc/uptime") as f:
        now = float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK")
    with open(os.path.join(seen, "crash"), "w") as f:
        f.write(str(now))
    sys.exit(1)
"""
# the preloaded module says which process imported it
MARKER = """\
import os
open(os.path.join(os.environ["SEEN_DIR"], f"pre-{os.getpid()}"), "w").close()
"""


def _standbys_of(marker: str) -> list[int]:
    """Pids of live processes whose command line preloads `marker` (standbys of this test)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            pids.append(int(entry.name))
    return pids


def test_a_crash_restarts_every_rank_in_its_standby(tmp_path: Path, aegis_run: Launch) -> None:
    marker = f"aegis_marker_{os.getpid()}_{tmp_path.name}".replace("-", "_")
    lib, seen = tmp_path / "lib", tmp_path / "seen"
    lib.mkdir()
    seen.mkdir()
    (lib / f"{marker}.py").write_text(MARKER)
    script = tmp_path / "crash_once.py"
    script.write_text(CRASH_ONCE.format(marker=marker))
    env = {"PYTHONPATH": str(lib), "SEEN_DIR": str(seen)}
    r = aegis_run(
        2, "--nproc-per-node", "2", "--preload", marker, cmd=[sys.executable, str(script)], env=env
    )
    assert r.finish(150) == 0, r.stderr[-3000:]
    assert r.status()["recoverCount"] == 1
    crash = float((seen / "crash").read_text())
    got = {p.name: p.read_text().split() for p in seen.glob("[01]-*")}
    assert sorted(got) == [f"{a}-{rank}" for a in (0, 1) for rank in range(4)]
    for rank in range(4):  # both attempts ran in standbys; the restart's started before the
        assert got[f"0-{rank}"][3] == got[f"1-{rank}"][3] == "1", (rank, got)  # crash
        assert int(got[f"1-{rank}"][2]) < crash, (rank, got, crash)
    # each saw the preload exactly when its standby had done it (a quiet machine: all eight)
    preloaded = {p.name.removeprefix("pre-") for p in seen.glob("pre-*")}
    for key in got:
        warm, pid, *_ = got[key]
        assert (warm == "1") == (pid in preloaded), (key, got, preloaded)
    assert not _standbys_of(marker)  # the standbys of a third attempt were killed


def test_a_preload_that_is_not_a_module_name_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    r = subprocess.run(
        [*AEGIS, "run", "-n", "1", "--state-dir", str(tmp_path / "s"), "--preload", "torch,x y",
         "--", "true"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2 and "--preload: 'x y' is not a module name" in r.stderr
    assert not (tmp_path / "s").exists()


STANDBYS_SEEN = """\
import os, sys
marker = sys.argv[1].encode()
found = []
for entry in os.listdir("/proc"):
    try:
        with open(f"/proc/{entry}/cmdline", "rb") as f:
            cmdline = f.read().split(b"\\0")
    except OSError:
        continue
    # a standby's program (and its reaper's) is the bootstrap, which preloads the marker
    if marker in cmdline and any(b"def _standby" in part for part in cmdline):
        found.append(entry)
print("standbys:", len(found))
"""


def test_an_agent_that_runs_its_command_alone_keeps_no_standby(tmp_path: Path) -> None:
    """No controller (fallback independent): the command runs cold, and the standbys the
    agent started for its first attempt are gone while it runs."""
    marker = f"aegis_marker_{os.getpid()}_{tmp_path.name}".replace("-", "_")
    script = tmp_path / "seen.py"
    script.write_text(STANDBYS_SEEN)
    env = alone_agent_env("alone", AEGIS_PRELOAD=marker)
    cmd = [*AEGIS, "agent", "--", sys.executable, str(script), marker]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "standbys: 0" in out.stdout, out.stdout[-2000:]
    assert not _standbys_of(marker)
