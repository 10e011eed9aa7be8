"""Aegis: fault-tolerance controller for distributed PyTorch training.

A training script may call `aegis.progress(step)` (hang detection) and
`aegis.checkpoint_done(step)` (a safe point for evicting a slow node); both are no-ops
outside an Aegis job and never raise.
"""

from aegis.checks.progress import checkpoint_done, progress

__all__ = ["checkpoint_done", "progress"]
__version__ = "0.1.0"
