"""Run TLC in `-tool` mode on a copy of a spec and turn its output into a `TlcResult`."""

from __future__ import annotations

import ctypes
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from aegis.errors import SpecError
from tools.tlc.cfg import TlcConfig, read_cfg, without_check_deadlock
from tools.tlc.interpret import ResultBuilder
from tools.tlc.jar import default_workers, java_command
from tools.tlc.result import Progress, TlcResult
from tools.tlc.sany import sany_errors
from tools.tlc.toolmode import ExitStatus, Message, ToolModeReader
from tools.tlc.workspace import Workspace, display_path, workspace

_CFG_AT_LINE = re.compile(r"at line (\d+)\s*(.*)", re.DOTALL)


def run_tlc(
    spec: Path | str,
    cfg: Path | str | None = None,
    *,
    extra_args: Sequence[str] = (),
    workers: int | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    timeout: float | None = None,
) -> TlcResult:
    """Model-check `spec` with `cfg` (default: the spec's .cfg); SpecError if it won't parse."""
    # `-dump [FORMAT] FILE` in extra_args: FILE is relative to the current directory.
    # `timeout` (seconds) kills TLC; the result then has `timed_out`.
    spec = Path(spec)
    cfg = Path(cfg) if cfg is not None else spec.with_suffix(".cfg")
    with workspace(spec, cfg) as ws:
        config = read_cfg(cfg, display_path(cfg))
        builder = ResultBuilder(config, on_progress, ws.relocate)
        reader = ToolModeReader()
        config_errors: list[str] = []
        assert ws.cfg is not None
        ws.cfg.write_text(without_check_deadlock(cfg.read_text(encoding="utf-8")), "utf-8")
        args = _tlc_args(ws, config, extra_args, workers)
        jtmp = ws.dir / "java-tmp"
        jtmp.mkdir()
        start = time.monotonic()
        exit_code, timed_out = _run(
            java_command("tlc2.TLC", *args, tmpdir=jtmp),
            ws.dir,
            reader,
            lambda m: _take(m, builder, config_errors, ws, config),
            timeout,
        )
        seconds = time.monotonic() - start
        if exit_code == ExitStatus.ERROR_SPEC_PARSE:
            found = sany_errors(reader.plain_lines, ws.locate) or builder.errors_so_far()
            raise SpecError("\n".join(found) or f"{display_path(spec)}: does not parse")
        if config_errors or exit_code == ExitStatus.ERROR_CONFIG_PARSE:
            found = config_errors or builder.errors_so_far()
            raise SpecError("\n".join(found) or f"{display_path(cfg)}: TLC rejected the config")
        return builder.finish(exit_code, seconds, timed_out)


def _tlc_args(
    ws: Workspace, config: TlcConfig, extra_args: Sequence[str], workers: int | None
) -> list[str]:
    """TLC's command line in tool mode (`-deadlock` where the cfg turns the check off)."""
    assert ws.cfg is not None
    off = config.check_deadlock is False and "-deadlock" not in extra_args
    return [
        "-tool",
        *(["-deadlock"] if off else []),
        "-metadir",
        str(ws.dir / "states"),
        "-workers",
        str(workers or default_workers()),
        *_absolute_files(extra_args),
        "-config",
        ws.cfg.name,
        ws.spec.name,
    ]


def _take(
    msg: Message,
    builder: ResultBuilder,
    config_errors: list[str],
    ws: Workspace,
    config: TlcConfig,
) -> None:
    """Route one message: config-file errors apart, everything else to the builder."""
    inner = [c for c in (msg, *msg.children) if 5000 <= c.code < 6000 or c.code == 2229]
    if inner:
        config_errors.extend(_cfg_error(c.text, ws, config) for c in inner)
    else:
        builder.add(msg)


def _cfg_error(text: str, ws: Workspace, config: TlcConfig) -> str:
    """A config error as `file.cfg:line: message`."""
    where = display_path(ws.original_cfg) if ws.original_cfg else "cfg"
    flat = " ".join(ws.relocate(text).split())
    if m := _CFG_AT_LINE.search(flat):
        return f"{where}:{m.group(1)}: {m.group(2) or flat}"
    line = next((config.lines[w] for w in re.findall(r"\w+", flat) if w in config.lines), None)
    return f"{where}:{line}: {flat}" if line else f"{where}: {flat}"


def _run(
    cmd: list[str],
    cwd: Path,
    reader: ToolModeReader,
    take: Callable[[Message], None],
    timeout: float | None,
) -> tuple[int, bool]:
    """Run the command, streaming its output through `reader`; (exit status, timed out)."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
        bufsize=1,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,
    )
    expired = threading.Event()

    def kill() -> None:
        expired.set()
        proc.kill()

    timer = threading.Timer(timeout, kill) if timeout is not None else None
    try:
        if timer is not None:
            timer.start()
        assert proc.stdout is not None
        for line in proc.stdout:
            for msg in reader.feed(line):
                take(msg)
        for msg in reader.close():
            take(msg)
        return proc.wait(), expired.is_set()
    finally:
        if timer is not None:
            timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _die_with_parent() -> None:
    """In the child: ask Linux to kill the JVM if this Python process dies first."""
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _absolute_files(args: Sequence[str]) -> list[str]:
    """Make the FILE of `-dump [FORMAT] FILE` absolute, since TLC runs in a temp dir."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg == "-dump" and i + 1 < len(out):
            j = i + 2 if out[i + 1].startswith("dot") and i + 2 < len(out) else i + 1
            out[j] = str(Path(out[j]).absolute())
    return out
