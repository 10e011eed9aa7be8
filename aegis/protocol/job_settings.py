"""One job's settings, whoever launches it: one default and one check of each, and their forms
as `aegis run` flags, as the environment of the controller process, and in a CR's spec.

`aegis run` reads them from its flags (`add_flags`, `from_flags`), checks them once
(`problem`), and hands them to its controller process whole, in AEGIS_JOB_SETTINGS
(`to_env`, `from_env`); on Kubernetes they come from the AegisJob's and the Aegis CR's spec
(`from_cr`), checked by the same rules, named as the spec names them.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from aegis.protocol.environment import (
    DEFAULT_HANG_TIMEOUT_S,
    DEFAULT_HEARTBEAT_RATE,
    ConfigError,
)
from aegis.protocol.errors import InvalidNameError
from aegis.protocol.subjects import validate_label

DEFAULT_MAX_RETRY = 3
DEFAULT_HEARTBEAT_TIMEOUT_S = 10.0
# more worker pods than the largest clusters have nodes (65,000): a larger workerNum is a typo,
# and the controller's per-job memory and the status size grow with it
MAX_WORKERS = 100_000
ENV_VAR = "AEGIS_JOB_SETTINGS"  # the settings of the controller process's job, as JSON

# how each setting is named where it is given
FLAGS: Mapping[str, str] = {
    "job": "--job",
    "namespace": "--namespace",
    "workers": "--nnodes (-n)",
    "max_retry": "--max-retry",
    "heartbeat_timeout": "--heartbeat-timeout",
    "heartbeat_rate": "--heartbeat-rate",
    "hang_timeout": "--hang-timeout",
    "checkpoint_dir": "--checkpoint-dir",
    "checkpoint_every": "--checkpoint-every",
    "checkpoint_shm_bytes": "--checkpoint-shm-bytes",
}
CR_FIELDS: Mapping[str, str] = {
    "job": "metadata.name",
    "namespace": "metadata.namespace",
    "workers": "spec.workerNum",
    "max_retry": "spec.maxRetry",
    "heartbeat_timeout": "heartbeat timeout",
    "heartbeat_rate": "heartbeat rate",
    "hang_timeout": "hang timeout",
    "checkpoint_dir": "checkpoint dir",
    "checkpoint_every": "checkpoint every",
    "checkpoint_shm_bytes": "checkpoint shared memory",
}


@dataclass(frozen=True)
class JobSettings:
    """What a job's controller is told: its name and namespace, its number of pods (workers,
    node agents), MaxRetry, and the heartbeat rules (`heartbeat_timeout` <= 0: never declare
    a pod lost; `heartbeat_rate` <= 0: no budget, docs/operations.md), and what its agents
    do with its ranks: the hang timeout (0: off) and where and how often they persist the
    steps of aegis.checkpoint (docs/checkpoints.md)."""

    job: str = "local"
    namespace: str = "default"
    workers: int = 1
    max_retry: int = DEFAULT_MAX_RETRY
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT_S
    heartbeat_rate: float = DEFAULT_HEARTBEAT_RATE
    hang_timeout: float = DEFAULT_HANG_TIMEOUT_S
    checkpoint_dir: str = ""  # "": the checkpoints stay in memory
    checkpoint_every: int = 0  # persist every K-th saved step (0: only at a failure)
    checkpoint_shm_bytes: int = 0  # the shared memory an agent's store may use (0: /dev/shm's)

    def problem(self, names: Mapping[str, str] = FLAGS) -> str | None:
        """What is wrong with these settings (None: nothing), the setting named as in
        `names` (FLAGS, CR_FIELDS)."""
        for key in ("job", "namespace"):
            try:
                validate_label(names[key], getattr(self, key))
            except InvalidNameError as exc:
                return str(exc)
        if not 1 <= self.workers <= MAX_WORKERS:
            return f"{names['workers']} must be 1 to {MAX_WORKERS}, got {self.workers}"
        if self.max_retry < 0:
            return f"{names['max_retry']} must be >= 0, got {self.max_retry}"
        if not (math.isfinite(self.heartbeat_timeout) and self.heartbeat_timeout >= 0):
            return (
                f"{names['heartbeat_timeout']} {self.heartbeat_timeout}: use a finite number "
                "of seconds >= 0 (0: never)"
            )
        if not (math.isfinite(self.heartbeat_rate) and self.heartbeat_rate >= 0):
            return (
                f"{names['heartbeat_rate']} {self.heartbeat_rate}: use a finite number of "
                "beats a second >= 0 (0: no budget)"
            )
        return self._agents_problem(names)

    def _agents_problem(self, names: Mapping[str, str]) -> str | None:
        """What is wrong with the settings the agents use (None: nothing)."""
        if not (math.isfinite(self.hang_timeout) and self.hang_timeout >= 0):
            return (
                f"{names['hang_timeout']} {self.hang_timeout}: use a finite number of seconds "
                ">= 0 (0: off)"
            )
        for key in ("checkpoint_every", "checkpoint_shm_bytes"):
            if getattr(self, key) < 0:
                return f"{names[key]} must be >= 0, got {getattr(self, key)}"
        if self.checkpoint_every and not self.checkpoint_dir:
            return f"{names['checkpoint_every']} needs {names['checkpoint_dir']} (where to persist)"
        return None

    def checked(self, names: Mapping[str, str] = FLAGS) -> JobSettings:
        """These settings, or ConfigError saying what is wrong."""
        problem = self.problem(names)
        if problem is not None:
            raise ConfigError(problem)
        return self

    @property
    def pods(self) -> tuple[str, ...]:
        """The pod names, rank order."""
        return tuple(f"{self.job}-worker-{i}" for i in range(self.workers))

    # ---------------- where they come from ----------------

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        """`aegis run`'s flags for them (the defaults are this class's), but `-n/--nnodes`
        (`dest="workers"`): the command line says more with it than a number of pods, and
        `--job`: "" unless given, a name the launcher chooses (docs/security.md, "What the
        training command is told")."""
        d = JobSettings()
        parser.add_argument(
            "--max-retry",
            type=int,
            default=d.max_retry,
            help=f"restarts allowed (default {d.max_retry})",
        )
        parser.add_argument(
            "--job",
            default="",
            help="job name (DNS label; default: the job its --state-dir holds, else "
            "local-<6 random hex digits>, no other job's)",
        )
        parser.add_argument("--namespace", default=d.namespace, help="namespace (DNS label)")
        parser.add_argument(
            "--heartbeat-timeout",
            type=float,
            default=d.heartbeat_timeout,
            help="seconds without an agent's heartbeat before its pod counts as lost (0: never)",
        )
        parser.add_argument(
            "--heartbeat-rate",
            type=float,
            default=d.heartbeat_rate,
            metavar="PER_S",
            help="heartbeats a second the agents send at most, together: a job of more pods "
            "than that times the beat period beats less often, and its timeout grows to 4 "
            f"beats (default {d.heartbeat_rate:g}; 0: no budget)",
        )
        _add_agent_flags(parser, d)

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> JobSettings:
        """The settings `add_flags` parsed, and `args.workers` (not checked)."""
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})

    def to_env(self) -> dict[str, str]:
        """The controller process's environment that carries them."""
        return {ENV_VAR: json.dumps(asdict(self), sort_keys=True)}

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> JobSettings:
        """The settings `to_env` wrote, checked (ConfigError says what is missing or wrong)."""
        text = env.get(ENV_VAR)
        if not text:
            raise ConfigError(f"{ENV_VAR} is not set: the launcher gives the job's settings")
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{ENV_VAR} is not JSON: {exc}") from None
        if not isinstance(obj, dict) or set(obj) != {f.name for f in fields(cls)}:
            raise ConfigError(f"{ENV_VAR} must hold exactly {[f.name for f in fields(cls)]}")
        for f in fields(cls):
            _check_type(f.name, str(f.type), obj[f.name])
        return cls(**obj).checked()

    @classmethod
    def from_cr(
        cls, name: str, namespace: str, spec: Mapping[str, Any], **others: Any
    ) -> JobSettings:
        """The settings a CR's spec gives (`workerNum`, `maxRetry`; a missing or mistyped one
        takes its default, 0 workers for `workerNum`): check them with `problem(CR_FIELDS)`;
        `others`: the settings a CR does not hold."""
        return cls(
            job=name,
            namespace=namespace,
            workers=_int(spec.get("workerNum"), 0),
            max_retry=_int(spec.get("maxRetry"), DEFAULT_MAX_RETRY),
            **others,
        )


def _add_agent_flags(parser: argparse.ArgumentParser, d: JobSettings) -> None:
    """`aegis run`'s flags for what the agents do with the ranks."""
    parser.add_argument(
        "--hang-timeout",
        type=float,
        default=d.hang_timeout,
        metavar="S",
        help="seconds without progress (progress file, output, CPU) before the agents look "
        "for the culprit rank, stop it and restart the ranks in place "
        f"(default {d.hang_timeout:g}; 0: off)",
    )
    parser.add_argument(
        "--checkpoint-dir",
        default=d.checkpoint_dir,
        metavar="DIR",
        help="where the agents persist the complete steps of aegis.checkpoint.save, in "
        "torch.distributed.checkpoint's format (default: memory only)",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=int,
        default=d.checkpoint_every,
        metavar="K",
        help="persist the saved steps that are multiples of K, off the training's path "
        "(default 0: only at a failure; needs --checkpoint-dir)",
    )
    parser.add_argument(
        "--checkpoint-shm-bytes",
        type=int,
        default=d.checkpoint_shm_bytes,
        metavar="N",
        help="shared memory each agent's checkpoint store may use (default 0: what /dev/shm "
        "has free); a save that does not fit goes to --checkpoint-dir",
    )


# a field's annotation -> the JSON types its value may have (never a bool)
_JSON_TYPES: dict[str, tuple[type, ...]] = {"float": (int, float), "int": (int,), "str": (str,)}


def _check_type(name: str, annotation: str, value: Any) -> None:
    """ConfigError unless `value` fits a field annotated `annotation` (else: a string)."""
    want = _JSON_TYPES.get(annotation, (str,))
    if isinstance(value, bool) or not isinstance(value, want):
        raise ConfigError(f"{ENV_VAR}: {name} must be {annotation}, got {value!r:.40}")


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
