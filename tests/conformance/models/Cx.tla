---- MODULE Cx ----
\* How TLC treats states outside the CONSTRAINT (tests/conformance/test_constraint_semantics.py)
EXTENDS Naturals
CONSTANT Limit
VARIABLES x, y
Init == x = 0 /\ y = 0
A == x' = x + 1 /\ y' = y
B == y' = 1 - y /\ x' = x
Next == A \/ B
Bound == x <= 2
Inv == x < Limit
====
