----------------------------- MODULE RingMath -----------------------------
(* Corpus helper (no model of its own): positions 1..N on a ring, instantiated by Election. *)
EXTENDS Naturals

CONSTANT N

Nodes == 1..N
Succ(n) == IF n = N THEN 1 ELSE n + 1
Pred(n) == IF n = 1 THEN N ELSE n - 1
=============================================================================
