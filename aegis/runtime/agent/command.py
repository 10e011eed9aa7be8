"""Whether the training command can start at all: a command that cannot is the user's error.

A missing executable, a file without the execute bit, a `.py` script named without its
interpreter: nothing on the node is wrong, and no retry or other node would change it. So the
command is resolved before anything is spent on it, in two places:

- `aegis run` resolves it before it starts any process (one line, exit 2);
- the agent resolves it when it starts (exit `AgentExit.BAD_COMMAND`, 78: the launcher and
  the Job Controller end the job at once, no node blamed), because on Kubernetes the command
  runs in an image `aegis run` never saw; and the runner's own exec failure (a file removed
  or made unexecutable meanwhile, a script with no `#!` line) is reported as the user's error
  (`Report.user_error`): the controller ends the job instead of counting a retry.

Resource failures of exec (out of memory, too many open files) are the node's, not the
user's: `is_user_error` tells them apart by errno.
"""

from __future__ import annotations

import errno
import importlib.machinery
import os
import re
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence

# exec errors that say the command itself is wrong, not the node
USER_ERRNOS = frozenset(
    {
        errno.ENOENT,
        errno.EACCES,
        errno.EPERM,
        errno.ENOEXEC,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ELOOP,
        errno.ENAMETOOLONG,
    }
)


_PYTHON = re.compile(r"python[0-9.]*$")


def is_user_error(exc: OSError) -> bool:
    """Whether an exec's OSError is the command's fault (else the node's: ENOMEM, EMFILE)."""
    return exc.errno in USER_ERRNOS


def command_problem(
    argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None
) -> str | None:
    """Why `argv` cannot start on this machine, in one sentence naming it; None if it can.

    `env` gives the PATH the command is looked up in (default: this process's), `cwd` the
    directory a relative path is taken from (default: the current one)."""
    if not argv or not argv[0]:
        return "no command given"
    program = argv[0]
    where = cwd or os.getcwd()
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    if os.sep not in program:
        if shutil.which(program, path=path) is not None:
            return _script_problem(argv, where, env)
        local = os.path.join(where, program)
        if os.path.isfile(local):
            return (
                f"{program!r} is not on PATH; the file in {where} is run as "
                f"{_runnable(program, f'./{program}')}"
            )
        return f"{program!r}: no such command on PATH"
    full = os.path.join(where, program)
    if not os.path.exists(full):
        return f"{program!r}: no such file (from {where})"
    if os.path.isdir(full):
        return f"{program!r} is a directory"
    if not os.access(full, os.X_OK):
        return f"{program!r} is not executable; run it as {_runnable(program, None)}"
    if program.endswith(".py") and not _starts_with(full, b"#!"):
        return (
            f"{program!r} has no '#!' line naming its interpreter; run it as "
            f"{_runnable(program, None)}"
        )
    return _script_problem(argv, where, env)


def _script_problem(argv: Sequence[str], where: str, env: Mapping[str, str] | None) -> str | None:
    """For `python SCRIPT ...`: a SCRIPT that does not exist (python would exit 2 at once,
    the same on every retry and every node). Only the plain form is judged: an option before
    the script (`-u`, `-m`, `-c`) leaves it to python."""
    if len(argv) < 2 or not _PYTHON.match(os.path.basename(argv[0])):
        return None
    script = argv[1]
    if script == "-m" and len(argv) > 2 and _same_python(argv[0]):
        pythonpath = (env if env is not None else os.environ).get("PYTHONPATH", "")
        return _module_problem(argv[2], [where, *pythonpath.split(os.pathsep)])
    if script.startswith("-") or os.path.exists(os.path.join(where, script)):
        return None
    return f"{script!r}: no such file (from {where}); {os.path.basename(argv[0])} cannot open it"


def _same_python(program: str) -> bool:
    """Whether `program` is this interpreter (its modules are this process's to look up)."""
    found = shutil.which(program) if os.sep not in program else program
    return found is not None and os.path.realpath(found) == os.path.realpath(sys.executable)


def _module_problem(module: str, first: Sequence[str]) -> str | None:
    """`python -m MODULE`: a MODULE whose top-level package is nowhere python would look
    (`first`: the working directory, then the command's PYTHONPATH, as `-m` does; then this
    interpreter's path). Only the top level is looked up: finding a submodule would import
    its package."""
    top = module.split(".", 1)[0]
    search = [p for p in first if p] + sys.path[1:]
    if not top or importlib.machinery.PathFinder.find_spec(top, search) is not None:
        return None
    if top in sys.builtin_module_names:
        return None
    return f"python -m {module}: no module named {top!r} (from {first[0]})"


def _runnable(program: str, as_path: str | None) -> str:
    """How the user can run `program`: with python for a script, else as a path (or chmod)."""
    if program.endswith(".py"):
        return f"'python {shlex.quote(program)}'"
    if as_path is not None:
        return shlex.quote(as_path)
    return f"'sh {shlex.quote(program)}' or after 'chmod +x {shlex.quote(program)}'"


def _starts_with(path: str, magic: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False


# Kubernetes shows a container's last words from this file in the pod's status
# (`state.terminated.message`), which the Job Controller copies into the AegisJob's status
TERMINATION_LOG = "/dev/termination-log"


def write_termination_message(text: str, path: str = TERMINATION_LOG) -> None:
    """Leave `text` where Kubernetes reads a container's termination message (nothing
    outside a container, where the file does not exist)."""
    if not os.path.exists(path):
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text[:4000])
    except OSError:
        pass
