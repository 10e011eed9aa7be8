---- MODULE Clash ----
\* Conformance fixture (tests/conformance/test_probe_names.py): it defines the names the probe
\* module once bound (b p d k x e); its cfg needs CHECK_DEADLOCK FALSE.
EXTENDS Naturals
CONSTANT N
VARIABLES pc, x, e, k
vars == << pc, x, e, k >>
b == 1
p(v) == v + b
d == {"a", "c"}
Small == x <= N
TypeOK == e \in d /\ k \subseteq 0..N
Init == /\ x = 0
        /\ e = "a"
        /\ k = {}
        /\ pc = "step"
step == /\ pc = "step"
        /\ x < N
        /\ x' = p(x)
        /\ e' = IF e = "a" THEN "c" ELSE "a"
        /\ k' = k \cup {x}
        /\ pc' = pc
Next == step
Spec == Init /\ [][Next]_vars
====
