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

from aegis.protocol.environment import DEFAULT_HEARTBEAT_RATE, ConfigError
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
}
CR_FIELDS: Mapping[str, str] = {
    "job": "metadata.name",
    "namespace": "metadata.namespace",
    "workers": "spec.workerNum",
    "max_retry": "spec.maxRetry",
    "heartbeat_timeout": "heartbeat timeout",
    "heartbeat_rate": "heartbeat rate",
}


@dataclass(frozen=True)
class JobSettings:
    """What a job's controller is told: its name and namespace, its number of pods (workers,
    node agents), MaxRetry, and the heartbeat rules (`heartbeat_timeout` <= 0: never declare
    a pod lost; `heartbeat_rate` <= 0: no budget, docs/operations.md)."""

    job: str = "local"
    namespace: str = "default"
    workers: int = 1
    max_retry: int = DEFAULT_MAX_RETRY
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT_S
    heartbeat_rate: float = DEFAULT_HEARTBEAT_RATE

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
        (`dest="workers"`): the command line says more with it than a number of pods."""
        d = JobSettings()
        parser.add_argument(
            "--max-retry",
            type=int,
            default=d.max_retry,
            help=f"restarts allowed (default {d.max_retry})",
        )
        parser.add_argument("--job", default=d.job, help="job name (DNS label)")
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


# a field's annotation -> the JSON types its value may have (never a bool)
_JSON_TYPES: dict[str, tuple[type, ...]] = {"float": (int, float), "int": (int,), "str": (str,)}


def _check_type(name: str, annotation: str, value: Any) -> None:
    """ConfigError unless `value` fits a field annotated `annotation` (else: a string)."""
    want = _JSON_TYPES.get(annotation, (str,))
    if isinstance(value, bool) or not isinstance(value, want):
        raise ConfigError(f"{ENV_VAR}: {name} must be {annotation}, got {value!r:.40}")


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
