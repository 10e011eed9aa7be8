"""The controller: the only executor of the job's global spec state.

`core` turns each event (an ACK, a report, a pod lost, a heartbeat missed, a quit) into spec
steps inside a transaction of its `journal` (commits, rollback, snapshots; `restore` resumes a
saved job; `store`, `wal` and `undo` underneath), so that the result is durable before its
order goes out; `orders` builds every message out and remembers what was published, `view`
renders the status, `recorder` the fault records, `liveness` when each agent was last heard.
`service` puts the core on the bus, reads the launcher's events and commits in groups
(`group_commit`: one fsync per loop turn); `observability` serves the metrics.
docs/persistence.md ("The controller's parts") says who owns what. No module here imports the
agent or the launcher.
"""
