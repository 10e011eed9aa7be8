"""Test doubles and harnesses for Aegis, for its own tests and benches and for users' tests.

Like `kopf.testing`, this package ships with Aegis so that code testing or measuring a
deployment of it does not depend on Aegis's own test tree; nothing else in `aegis` imports it
(an import contract in pyproject.toml). Import the submodules explicitly:

- `memory_api`: an in-memory Kubernetes API (`MemoryApi`: objects, resource versions,
  merge patches, label selectors, watches with history), for code that makes thousands of
  API calls, where an HTTP emulator costs tens of milliseconds a call; `MemoryCrApi`, one
  Aegis CR's status without copies, for measuring a status store alone.
- `lean_nats`: a minimal NATS client (`LeanNats`: CONNECT with a signed nonce, SUB, PUB),
  for simulating thousands of agents in one process against a real nats-server.
- `scripted_job`: a real controller core driven in-process by scripted pod events (joins,
  reports, crashes, controller restarts), writing a real status and step log.
- `netns`: hosts on one machine, each a Linux network namespace with its own address on a
  bridge (root and iproute2), whose links can be cut, slowed (`nfqueue` where the kernel has
  no netem) or captured: for a job across hosts without a cluster.
"""
