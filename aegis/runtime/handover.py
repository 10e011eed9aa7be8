"""A secret handed from a launcher to the agent it starts: on an inherited socket, read once.

Never in the environment or the command line, which other processes of the same user (the
training command among them) read in /proc/<pid>/environ and /proc/<pid>/cmdline: the
launcher writes the secret into one end of a Unix socket pair and closes that end; the child
inherits the other end, whose number alone is in its environment (`AEGIS_SECRET_FD`), reads
the secret at once, closes it and forgets the number. A socket, not a pipe or a file: opening
`/proc/<pid>/fd/N` of a socket fails (ENXIO), so no other process can read the secret
first, as it could through a pipe's or a file's /proc entry. Taking the descriptor itself
needs ptrace rights over the agent (pidfd_getfd), which Yama's default scope gives only to
the agent's ancestors. The training command never has the descriptor (the agent closed it
before starting anything).

`hand_over` (launcher) and `take_handed` (agent) are the whole protocol: another secret (a
multi-node job's join secret), or anything a child must be told that the rest of the machine
must not read (the controller's state directory, `AEGIS_STATE_DIR_FD`), goes the same way.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import MutableMapping
from dataclasses import dataclass

from aegis.errors import AegisError
from aegis.protocol.environment import Var

MAX_SECRET_BYTES = 8192


class HandoverError(AegisError):
    """The handed secret is missing or unreadable (taken by someone else, or never sent)."""


@dataclass
class Handover:
    """The child's end of a socket pair holding one secret: pass `fd` to the child
    (`pass_fds`, its number in `env`), then `close()` this process's copy."""

    fd: int
    var: str = Var.SECRET_FD  # the variable that tells the child the descriptor's number

    @property
    def env(self) -> dict[str, str]:
        """The variable telling the child where to read."""
        return {self.var: str(self.fd)}

    def close(self) -> None:
        """Close this process's copy of the child's end (after the child started, or not)."""
        with contextlib.suppress(OSError):
            os.close(self.fd)


def hand_over(secret: str, var: str = Var.SECRET_FD) -> Handover:
    """A socket pair whose child end holds `secret` (written, the writing end closed); the
    child is told its number in `var`."""
    data = secret.encode("utf-8")
    if not data or len(data) > MAX_SECRET_BYTES:
        raise ValueError(f"a handed secret must be 1..{MAX_SECRET_BYTES} bytes")
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours:
        ours.sendall(data)
    fd = theirs.detach()
    os.set_inheritable(fd, True)
    return Handover(fd, var)


def take_handed(env: MutableMapping[str, str], var: str = Var.SECRET_FD) -> str | None:
    """The secret handed on the descriptor `env` names in `var` (read to its end, closed, the
    variable removed); None when `env` names none. HandoverError when it is empty or
    unreadable."""
    text = env.pop(var, None)
    if text is None:
        return None
    try:
        fd = int(text)
    except ValueError:
        raise HandoverError(f"{var} must be a descriptor number, got {text!r}") from None
    try:
        with socket.socket(fileno=fd) as sock:
            chunks = []
            while chunk := sock.recv(MAX_SECRET_BYTES + 1):
                chunks.append(chunk)
                if sum(map(len, chunks)) > MAX_SECRET_BYTES:
                    raise HandoverError("the handed secret is too long")
    except OSError as exc:
        raise HandoverError(f"cannot read the handed secret on fd {fd}: {exc}") from None
    secret = b"".join(chunks).decode("utf-8", "replace")
    if not secret:
        raise HandoverError(f"no secret on fd {fd}: someone else read it, or none was sent")
    return secret
