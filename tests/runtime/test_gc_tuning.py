"""The controller process's collector thresholds (aegis/runtime/gc_tuning.py)."""

from __future__ import annotations

import gc

import pytest

from aegis.runtime.gc_tuning import CONTROLLER_THRESHOLDS, thresholds, tune_controller_process


def test_thresholds_hold_inside_the_block_and_come_back_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), thresholds((12_345, 3, 4)):
        assert gc.get_threshold() == (12_345, 3, 4)
        raise RuntimeError("the block failed")
    assert gc.get_threshold() == before


def test_the_controller_process_gets_its_thresholds() -> None:
    with thresholds(gc.get_threshold()):  # put back for the other tests
        tune_controller_process()
        assert gc.get_threshold() == CONTROLLER_THRESHOLDS
    assert CONTROLLER_THRESHOLDS[0] > 700  # fewer, larger young collections than CPython's
