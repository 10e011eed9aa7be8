"""The launcher: `aegis run`, a whole job on one machine.

`local` starts nats-server, the credential service, the controller and one agent per node
slot, replaces agents that exit and restarts a controller that dies, and ends every process
it started when the job ends. It sits on top of the runtime: it may import the controller,
the agent and the transport; none of them imports it.
"""
