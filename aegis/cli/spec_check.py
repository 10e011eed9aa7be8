"""`aegis spec check` (model-check the spec with TLC) and `aegis spec translate` (PlusCal)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TextIO

import aegis
from aegis.errors import SpecError
from tools.tlc.report import format_result
from tools.tlc.result import Progress, result_json
from tools.tlc.runner import run_tlc
from tools.tlc.translation import check_translation, translate
from tools.tlc.workspace import display_path

DEFAULT_SPEC = Path("spec/AegisPhase.tla")
REPO_ROOT = Path(aegis.__file__).resolve().parent.parent


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `check` and `translate` subcommands."""
    check = sub.add_parser("check", help="model-check the spec with TLC")
    check.add_argument("spec", nargs="?", type=Path, default=DEFAULT_SPEC, help="the .tla file")
    check.add_argument("--config", type=Path, help="model config (default: SPEC with .cfg)")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.add_argument("--workers", type=int, help="TLC worker threads (default: all cores)")
    check.add_argument(
        "--deadlock",
        action="store_true",
        help="do not report a state with no successor (TLC's -deadlock; the cfg's "
        "CHECK_DEADLOCK FALSE does the same)",
    )
    check.set_defaults(func=run_check)
    trans = sub.add_parser("translate", help="regenerate the spec's PlusCal translation")
    trans.add_argument("spec", nargs="?", type=Path, default=DEFAULT_SPEC, help="the .tla file")
    trans.set_defaults(func=run_translate)


def resolve(path: Path) -> Path:
    """The path as given if it exists (or is absolute), else relative to the repo root."""
    if path.is_absolute() or path.exists():
        return path
    in_repo = REPO_ROOT / path
    return in_repo if in_repo.exists() else path


def run_check(args: argparse.Namespace) -> int:
    """Verify the translation is current, run TLC, report; 0 iff nothing was violated."""
    spec = resolve(args.spec)
    cfg = resolve(args.config) if args.config else spec.with_suffix(".cfg")
    if not spec.is_file():
        raise SpecError(f"{display_path(spec)}: spec not found")
    if not cfg.is_file():
        raise SpecError(f"{display_path(cfg)}: model config not found")
    extra = ("-deadlock",) if args.deadlock else ()
    with _terminate_cleanly():
        check_translation(spec)
        if args.json:
            result = run_tlc(spec, cfg, workers=args.workers, extra_args=extra)
            print(json.dumps(result_json(result)))
        else:
            with ProgressLine(sys.stderr) as progress:
                result = run_tlc(
                    spec, cfg, workers=args.workers, on_progress=progress, extra_args=extra
                )
            print(format_result(result, f"{display_path(spec)} with {display_path(cfg)}"))
    return 0 if result.ok else 1


@contextmanager
def _terminate_cleanly() -> Iterator[None]:
    """Turn SIGTERM into SystemExit so TLC is stopped and its temp dir removed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_translate(args: argparse.Namespace) -> int:
    """Regenerate the PlusCal translation in place."""
    spec = resolve(args.spec)
    changed = translate(spec)
    state = "translation updated" if changed else "translation already current"
    print(f"{display_path(spec)}: {state}")
    return 0


class ProgressLine:
    """TLC's progress on stderr: a refreshed line on a terminal, else one line per report."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.start = time.monotonic()
        self.last = "starting"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._tick, daemon=True)

    def __enter__(self) -> ProgressLine:
        if self.tty:
            self.thread.start()
        else:
            print("TLC: running", file=self.out, flush=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.tty:
            self.thread.join()
            print("\r\033[K", end="", file=self.out, flush=True)

    def __call__(self, p: Progress) -> None:
        depth = "" if p.depth is None else f", depth {p.depth}"
        self.last = (
            f"{p.distinct_states:,} distinct states, {p.states_generated:,} generated, "
            f"{p.queue:,} on queue{depth}"
        )
        if not self.tty:
            print(f"TLC: {self.last}", file=self.out, flush=True)

    def _tick(self) -> None:
        while not self.stop.wait(0.5):
            secs = time.monotonic() - self.start
            print(f"\r\033[KTLC {secs:5.0f}s: {self.last}", end="", file=self.out, flush=True)
