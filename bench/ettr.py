"""Effective training time ratio (ETTR) of one job under three launchers, side by side.

    python bench/ettr.py [--steps 2000] [--mean-interval 30] [--seed 1] [--json]

The job (bench/ettr_train.py: a small GPT, DDP over gloo, AdamW, data indexed by the step)
runs fault-free, then with faults injected from outside at exponential intervals (seeded:
every launcher gets the same schedule, in seconds from its launch), under
(a) `torchrun --max-restarts` + `torch.save` every K steps,
(b) `aegis run` + the same `torch.save`,
(c) `aegis run` + `aegis.checkpoint.save` every step, persisted every K.
Faults: a rank crash (SIGKILL), a hang (SIGSTOP, never continued), a node loss (the node's
agent -- torchrun itself for (a) -- and its ranks SIGKILLed; the bench plays the scheduler
that starts a lost torchrun again, as Kubernetes would a pod), a slow rank (a flag file the
job reads: it sleeps --slow-s more per step for --slow-for s).

Per launcher: ETTR (the share of the wall time that trains: `summarize` says what is lost),
time lost per fault (against its own fault-free run), the time from each fault to training
again, steps recomputed per fault (done again after a restart), save blocking time, restore
time by source, faults recovered (training went on after them) and whether the job finished.
The job is compressed (a step of ~50 ms on 2 cores), and so is the hang timeout (3 s); the
Aegis launchers keep standby ranks (`--aegis-flags`), torchrun has none. A save section
measures, for a state of --state-mb MB under `aegis run`: save blocking against a plain
memcpy and `torch.save`, the restore after an in-place restart against `torch.load`, a
step's compute while a persist runs. docs/checkpoints.md, "Measured", has the figures and
the method.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # run as a script from anywhere: its sibling modules

from ettr_figures import KINDS, Fault, Job, productive, step_time, summarize, summarize_kept  # noqa: E402

from aegis.runtime.agent.containment import descendants  # noqa: E402

TRAIN = str(HERE / "ettr_train.py")
AEGIS = [sys.executable, "-m", "aegis.cli"]


def schedule(
    seed: int, mean: float, horizon: float, kinds: Sequence[str], ranks: int
) -> list[Fault]:
    """Faults at exponential intervals of mean `mean` s up to `horizon` s (seeded)."""
    rng = random.Random(seed)
    out: list[Fault] = []
    t = 0.0
    while True:
        t += rng.expovariate(1.0 / mean)
        if t > horizon:
            return out
        out.append(Fault(round(t, 2), rng.choice(list(kinds)), rng.randrange(ranks)))


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


NODE_PROGRAMS = (b"torch.distributed.run", b"aegis.cli\0agent")  # torchrun; an Aegis agent


def node_of(pid: int) -> int | None:
    """The node process above rank `pid`: its torchrun, or its Aegis agent (a rank runs
    under a reaper of its own, the agent's child)."""
    while pid > 1:
        pid = _ppid(pid)
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        if any(p in cmd for p in NODE_PROGRAMS):
            return pid
    return None


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, sig)


def inject(job: Job, fault: Fault, slow_flag: Path, slow_for: float) -> bool:
    """Apply `fault` to `job` now; False when its rank is not running (between attempts)."""
    if fault.kind == "slow":
        slow_flag.write_text(str(fault.rank))
        threading.Timer(slow_for, lambda: slow_flag.unlink(missing_ok=True)).start()
        return True
    pid = job.rank_pid(fault.rank)
    if pid is None:
        return False
    if fault.kind == "crash":
        _kill(pid, signal.SIGKILL)
    elif fault.kind == "hang":
        _kill(pid, signal.SIGSTOP)
    else:  # node: its agent (torchrun for torchrun) and every process below it
        try:
            node = node_of(pid)
            tree = [] if node is None else descendants(node)
        except (OSError, IndexError, ValueError):
            return False
        if node is None:
            return False
        for victim in (node, *tree):
            _kill(victim, signal.SIGKILL)
        job.node_losses += 1
    return True


def run(job: Job, faults: Sequence[Fault], limit: float, slow_for: float) -> tuple[float, bool]:
    """Run `job` with `faults`; (wall seconds, whether it finished every step)."""
    slow_flag = Path(job.env["ETTR_SLOW"])
    pending = list(faults)
    env = {**os.environ, **job.env, "ETTR_RUN": job.marker}

    def launch(mode: str) -> subprocess.Popen[bytes]:
        with (job.work / "launcher.err").open(mode) as err:
            return subprocess.Popen(
                job.argv, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=err
            )

    started = time.monotonic()
    proc = launch("w")
    done = False
    while True:
        now = time.monotonic() - started
        while pending and pending[0].at <= now:
            fault = pending.pop(0)
            if inject(job, fault, slow_flag, slow_for):
                job.applied.append((time.time(), fault))
        code = proc.poll()
        done = any(e["e"] == "done" for e in job.events())
        if code is not None:
            restart = job.name == "torchrun" and not done and job.node_losses and code != 0
            if restart and now < limit:  # the scheduler starts a lost torchrun again
                proc = launch("a")
                continue
            return time.monotonic() - started, done and code == 0
        if now > limit:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return time.monotonic() - started, False
        time.sleep(0.05)


LAUNCHERS = ("torchrun", "aegis+torch.save", "aegis+checkpoint")


def launcher(name: str, args: argparse.Namespace, work: Path) -> tuple[list[str], str]:
    """(argv, ETTR_MODE) of launcher `name` for a job in `work`."""
    common = ["--max-retry", "100", "--hang-timeout", str(args.hang_timeout)]
    aegis = [*AEGIS, "run", "-n", "1", "--nproc-per-node", str(args.nproc), *common]
    aegis += ["--state-dir", str(work / "state"), *shlex.split(args.aegis_flags)]
    table = {
        "torchrun": (
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc-per-node",
                str(args.nproc),
                "--max-restarts",
                "100",
                TRAIN,
            ],
            "torchsave",
        ),
        "aegis+torch.save": ([*aegis, "--", sys.executable, TRAIN], "torchsave"),
        "aegis+checkpoint": (
            [
                *aegis,
                "--checkpoint-dir",
                str(work / "ckpt"),
                "--checkpoint-every",
                str(args.save_every),
                "--",
                sys.executable,
                TRAIN,
            ],
            "aegis",
        ),
    }
    return table[name]


def new_job(name: str, args: argparse.Namespace, tag: str) -> Job:
    """A job of launcher `name` in a new work directory."""
    work = Path(tempfile.mkdtemp(prefix=f"ettr-{tag}-"))
    argv, mode = launcher(name, args, work)
    env = {
        "ETTR_LOG": str(work / "events.jsonl"),
        "ETTR_DIR": str(work),
        "ETTR_MODE": mode,
        "ETTR_STEPS": str(args.steps),
        "ETTR_SAVE_EVERY": str(args.save_every),
        "ETTR_SLOW": str(work / "slow"),
        "ETTR_SLOW_S": str(args.slow_s),
        "ETTR_NPROC": str(args.nproc),
        "ETTR_MODEL": args.model,
        "ETTR_ASYNC": "1" if args.async_save else "0",
    }
    return Job(name, argv, env, work)


def save_section(args: argparse.Namespace) -> dict[str, Any]:
    """Save and restore of a state of --state-mb MB under `aegis run` (one rank)."""
    work = Path(tempfile.mkdtemp(prefix="ettr-save-"))
    argv = [
        *AEGIS,
        "run",
        "-n",
        "1",
        "--state-dir",
        str(work / "state"),
        "--max-retry",
        "3",
        "--checkpoint-dir",
        str(work / "ckpt"),
        "--checkpoint-every",
        "5",
        "--",
        sys.executable,
        TRAIN,
    ]
    env = {
        **os.environ,
        "ETTR_LOG": str(work / "events.jsonl"),
        "ETTR_DIR": str(work),
        "ETTR_MEASURE": str(args.state_mb),
    }
    try:  # its state files are --state-mb MB a version: not kept after the figures are read
        subprocess.run(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800
        )
        ev = [json.loads(x) for x in (work / "events.jsonl").read_text().splitlines()]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    m = next(e for e in ev if e["e"] == "measure")
    restores = {e["source"]: e for e in ev if e["e"] == "restore"}
    dcp_load = next((e["s"] for e in ev if e["e"] == "dcp_load"), None)
    save = statistics.median(m["aegis_save"])
    asave = statistics.median(m["aegis_save_async"])
    mem, disk = restores.get("memory", {}), restores.get("disk", {})
    return {
        "state_mb": round(m["bytes"] / 2**20, 1),
        "memcpy_s": round(m["memcpy"], 4),
        "aegis_save_s": round(save, 4),
        "torch_save_s": round(m["torch_save"], 4),
        "torch_save_fsync_s": round(m["torch_save_fsync"], 4),
        "save_over_memcpy": round(save / m["memcpy"], 2),
        "save_over_torch_save": round(save / m["torch_save"], 3),
        "save_over_torch_save_fsync": round(save / m["torch_save_fsync"], 3),
        "aegis_save_async_s": round(asave, 4),
        "async_over_memcpy": round(asave / m["memcpy"], 3),
        "async_over_torch_save": round(asave / m["torch_save"], 3),
        "step_s": round(m["step_quiet"], 4),
        "step_with_async_save_ratio": round(
            statistics.median(m["step_with_async_save"]) / m["step_quiet"], 3
        ),
        "step_during_persist_ratio": round(
            statistics.median(m["step_during_persist"]) / m["step_quiet"], 3
        ),
        "torch_load_s": round(m["torch_load"], 4),
        "restore_memory_s": mem.get("s"),
        "restore_memory_into_model_s": mem.get("into_model"),
        "restore_disk_s": disk.get("s"),
        "restore_disk_into_model_s": disk.get("into_model"),
        "dcp_load_persisted_s": dcp_load,
        "restore_memory_over_torch_load": round(mem["s"] / m["torch_load"], 4) if mem else None,
        "restore_disk_over_torch_load": round(disk["s"] / m["torch_load"], 4) if disk else None,
    }


def fault_free_rounds(args: argparse.Namespace) -> dict[str, Any]:
    """Fault-free walls of torchrun and aegis+checkpoint, run in turns (the order swapped
    each round): a machine whose load drifts slows both alike."""
    walls: dict[str, list[float]] = {"torchrun": [], "aegis+checkpoint": []}
    for r in range(args.ff_rounds):
        names = list(walls) if r % 2 == 0 else list(walls)[::-1]
        for name in names:
            wall, ok = run(new_job(name, args, "ffr"), [], limit=3600, slow_for=args.slow_for)
            walls[name].append(round(wall, 2) if ok else float("nan"))
    ratios = [a / t for a, t in zip(walls["aegis+checkpoint"], walls["torchrun"], strict=True)]
    return {
        "walls_s": walls,
        "aegis_over_torchrun": [round(x, 3) for x in ratios],
        "median_ratio": round(statistics.median(ratios), 3) if ratios else None,
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--model", default="128,2,64", help="width,layers,tokens of the GPT")
    p.add_argument("--save-every", type=int, default=50, help="K: torch.save / persist every K")
    p.add_argument("--mean-interval", type=float, default=30.0, help="mean s between faults")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument(
        "--hang-timeout",
        type=float,
        default=3.0,
        help="s: compressed with the job (about 60 of its steps on 2 cores)",
    )
    p.add_argument("--slow-s", type=float, default=0.2)
    p.add_argument("--slow-for", type=float, default=10.0)
    p.add_argument("--state-mb", type=int, default=256)
    p.add_argument("--async-save", action="store_true", help="(c) saves asynchronously")
    p.add_argument(
        "--aegis-flags",
        default="--preload torch,torch._dynamo",
        help="`aegis run` flags of (b) and (c) (default: standby ranks that import torch and "
        "torch._dynamo, which DDP imports, ahead of a restart)",
    )
    p.add_argument(
        "--ff-rounds",
        type=int,
        default=0,
        help="also run torchrun and aegis+checkpoint fault-free, in turns, N times",
    )
    p.add_argument("--only", default="", help="comma-separated launchers (default all)")
    p.add_argument("--skip-save-section", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--schedule",
        action="store_true",
        help="print the fault schedule of --seed over 20 mean intervals and exit",
    )
    p.add_argument(
        "--summarize",
        type=Path,
        metavar="DIR",
        help="print the figures of a run kept in DIR (events.jsonl, run.json) and exit",
    )
    args = p.parse_args(argv)
    if args.schedule:
        horizon = args.mean_interval * 20
        kinds = args.kinds.split(",")
        print(
            json.dumps(
                [
                    vars(f)
                    for f in schedule(args.seed, args.mean_interval, horizon, kinds, args.nproc)
                ]
            )
        )
        return 0
    if args.summarize is not None:
        print(json.dumps(summarize_kept(args.summarize)))
        return 0
    out: dict[str, Any] = {"args": vars(args), "launchers": {}}
    wanted = [n for n in LAUNCHERS if not args.only or n in args.only.split(",")]
    for name in wanted:
        ff = new_job(name, args, "ff")
        ff_wall, ff_ok = run(ff, [], limit=3600, slow_for=args.slow_for)
        ff_step = step_time(ff)
        ff_productive = productive([e for e in ff.events() if e["e"] == "step" and e["rank"] == 0])
        horizon = ff_wall * 3
        faults = schedule(args.seed, args.mean_interval, horizon, args.kinds.split(","), args.nproc)
        job = new_job(name, args, "faults")
        wall, ok = run(job, faults, limit=ff_wall * 6 + 600, slow_for=args.slow_for)
        figures = summarize(job, wall, ok, ff_wall, ff_step, ff_productive)
        figures["fault_free_finished"] = ff_ok
        out["launchers"][name] = figures
        print(f"{name}: {json.dumps(figures)}", file=sys.stderr, flush=True)
    if "torchrun" in out["launchers"]:
        base = out["launchers"]["torchrun"]
        for f in out["launchers"].values():
            f["fault_free_over_torchrun"] = round(
                f["fault_free_wall_s"] / base["fault_free_wall_s"], 3
            )
            if base["lost_per_fault_s"] and f["lost_per_fault_s"] is not None:
                f["lost_per_fault_over_torchrun"] = round(
                    f["lost_per_fault_s"] / base["lost_per_fault_s"], 3
                )
    if args.ff_rounds:
        out["fault_free"] = fault_free_rounds(args)
    if not args.skip_save_section:
        out["save"] = save_section(args)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print_table(out)
    return 0


def print_table(out: dict[str, Any]) -> None:
    rows = [
        (
            "launcher",
            "ETTR",
            "lost/fault s",
            "vs torchrun",
            "recomputed/fault",
            "save ms",
            "restore ms",
            "recovered",
            "finished",
            "fault-free s",
            "ff vs torchrun",
        )
    ]
    for name, f in out["launchers"].items():
        save = f["save_blocking_s"]["median"] * 1e3 if f["save_blocking_s"] else 0.0
        restore = ", ".join(f"{k} {v['median'] * 1e3:.0f}" for k, v in f["restore_s"].items())
        rows.append(
            (
                name,
                str(f["ettr"]),
                str(f["lost_per_fault_s"]),
                str(f.get("lost_per_fault_over_torchrun", "-")),
                str(f["recomputed_per_fault"]),
                f"{save:.1f}",
                restore or "-",
                f["recovered"],
                str(f["finished"]),
                str(f["fault_free_wall_s"]),
                str(f.get("fault_free_over_torchrun", "-")),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    for name, f in out["launchers"].items():
        print(
            f"{name}: faults {f['faults_by_kind']}, recomputed by kind {f['recomputed_by_kind']}, "
            f"training again s {f['training_again_s']}, ETTR at the median pace {f['ettr_pace']}, "
            f"compute while persisting x{f['step_compute_during_persist_ratio']}"
        )
    if "fault_free" in out:
        print("fault-free in turns:", json.dumps(out["fault_free"]))
    if "save" in out:
        print("save section:", json.dumps(out["save"]))


if __name__ == "__main__":
    sys.exit(main())
