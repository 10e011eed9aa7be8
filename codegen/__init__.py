"""Generate Python from a PlusCal/TLA+ spec: SANY XML → IR → checks → phases → emit.

Entry points: `codegen.pipeline.generate(spec, cfg)` returns the formatted files of one
package; `write`, `diff` and `load` put them on disk, compare and import them. The CLI is
`aegis spec gen` / `aegis spec diagram` (aegis/cli/spec_gen.py).
"""
