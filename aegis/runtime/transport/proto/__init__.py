"""gRPC/protobuf stubs generated from the `.proto` files here (`python -m` this package)."""
