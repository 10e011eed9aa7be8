------------------------------ MODULE Counter ------------------------------
(* Corpus helper (no model of its own): a counter that wraps at Limit, with its own Spec;
   instantiated by Odometer. *)
EXTENDS Naturals

CONSTANT Limit

VARIABLE n

CInit == n = 0
Tick == n < Limit /\ n' = n + 1
Wrap == n = Limit /\ n' = 0
CNext == Tick \/ Wrap
CSpec == CInit /\ [][CNext]_n
CTypeOK == n \in 0 .. Limit
=============================================================================
