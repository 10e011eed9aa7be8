"""Randomized fault schedules over real `aegis run` jobs (issue 14): process faults, a
corrupted state dir and message faults through a NATS proxy; see schedules.py."""
