------------------------------- MODULE Gauge -------------------------------
(* Corpus spec, refused: Counter's CONSTANT Limit is instantiated with a VARIABLE. SANY's
   level check rejects it (a constant parameter takes a constant-level expression), so
   TLC does not run it, and generation refuses it with SANY's words. *)
EXTENDS Naturals

VARIABLES level, cap

G == INSTANCE Counter WITH n <- level, Limit <- cap

Init == level = 0 /\ cap = 2
Next == G!CNext /\ UNCHANGED cap
=============================================================================
