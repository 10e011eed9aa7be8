------------------------------- MODULE Spare -------------------------------
(* Corpus spec, refused: `CHOOSE x : P` with no bound, which TLC cannot evaluate either
   (unless the cfg replaces the definition by a model value: see Override). Generation
   refuses it where it is written. *)
EXTENDS Naturals

CONSTANT Parts

None == CHOOSE p : p \notin Parts

VARIABLE spare

Init == spare = None
Fit == spare = None /\ \E p \in Parts : spare' = p
Use == spare # None /\ spare' = None
Next == Fit \/ Use
=============================================================================
