"""The wire protocol of Aegis, as pure code (no I/O, no NATS, no gRPC).

The envelope and its codec, the subjects of a job, the typed payloads of orders, reports and
receipts, the exit codes agents and controllers leave with, faults as records (`faults`), the
launcher's events to its controller, a job's settings, and the `AEGIS_*` environment
contract between a launcher (local or Kubernetes) and its agents: each in one place.
"""
