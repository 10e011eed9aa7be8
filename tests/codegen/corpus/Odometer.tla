------------------------------ MODULE Odometer ------------------------------
(* Corpus spec, plain TLA+: an unnamed INSTANCE is the whole spec. The cfg's SPECIFICATION
   is Counter's CSpec, seen through `INSTANCE Counter WITH ...`: TLC 2.15 takes the
   next-state relation it reads off such a wrapper as one action under the substitution and
   names it UnnamedAction (it splits neither CNext nor its Tick and Wrap). *)
EXTENDS Naturals

VARIABLE km

INSTANCE Counter WITH n <- km, Limit <- 3
=============================================================================
