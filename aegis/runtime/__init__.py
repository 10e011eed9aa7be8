"""The runtime: what executes the generated spec tables as processes.

`controller/` runs the global state (one process per job), `agent/` runs one pod's side
(one per pod, the training ranks its children), `transport/` is the only code that speaks
NATS and gRPC, and `launcher/` starts a whole job on one machine (`aegis run`). The modules
at this level are shared by both sides: the spec engine (`engine`, `phases`), the step log
and its replay (`steplog`, `trace_check`), the operator's control protocol (`control`),
process lifetimes (`lifetime`) and the runtime's errors. Agent and controller never import
each other, and nothing here imports the launcher (import contracts in pyproject.toml).
"""
