------------------------------ MODULE Tally ------------------------------
(* Corpus helper (no model of its own): a counter up to Limit, instantiated by Barrier. *)
EXTENDS Naturals

CONSTANT Limit
VARIABLE count

Zero == count = 0
Full == count = Limit
Incr == count < Limit /\ count' = count + 1
=============================================================================
