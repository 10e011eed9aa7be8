"""Conformance: the generated Python tables against TLC's state graph, state by state."""
