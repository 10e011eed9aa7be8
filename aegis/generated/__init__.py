"""Code generated from the TLA+ specs by codegen (see codegen/); do not edit."""
