"""The only package that imports nats and grpc: auth, embedded server, credentials, bus.

Import submodules explicitly (`aegis.runtime.transport.bus`); this file imports nothing, so
pure users such as `aegis.protocol.envelope` can use `transport.subjects` without NATS.
"""
