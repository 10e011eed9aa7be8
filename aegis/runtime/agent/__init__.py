"""The agent: one pod's side of the spec, and the owner of its training processes.

`core` decides from the generated agent view (which order to work on, what to report, when
to leave), without I/O; `service` does the I/O around it (credentials, bus, heartbeats,
checks, hang watch). `runner` and `ranks` start the user's command the way torchrun would
and stop it without leftovers; `standby` keeps interpreters started ahead for fast restarts;
`pid1` does tini's duties when the agent is a container's first process. No module here
imports the controller or the launcher.
"""
