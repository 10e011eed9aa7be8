"""Helpers shared by the test packages: one `wait_for`, one `aegis run` launcher, one running
controller. Test packages import them relatively (`from ..support import wait_for`)."""

from .controller import MemoryStore, RunningController, running_controller
from .freeze import freeze
from .launch import AEGIS, TRAIN, AegisRun, Launch, alone_agent_env
from .wait import first_request, wait_for, wait_for_async

__all__ = [
    "AEGIS",
    "TRAIN",
    "AegisRun",
    "Launch",
    "MemoryStore",
    "RunningController",
    "alone_agent_env",
    "first_request",
    "freeze",
    "running_controller",
    "wait_for",
    "wait_for_async",
]
