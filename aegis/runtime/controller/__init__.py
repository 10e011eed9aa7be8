"""The controller: the only executor of the job's global spec state.

`core` turns each event (an ACK, a report, a pod lost, a heartbeat missed, a quit) into spec
steps and persists the result before its order goes out; `service` puts the core on the bus
and reads the launcher's events. Durability is `store` (the status, shaped like the Aegis
CR), `wal` and `group_commit` (one fsync per loop turn), `undo` (a failed event leaves no
trace); `order_versions` says which order each pod must hold; `observability` serves the
metrics. No module here imports the agent or the launcher.
"""
