------------------------------ MODULE Override ------------------------------
(* Corpus spec, plain TLA+: the cfg gives values to definitions, as TLC allows. `Nat = {...}`
   overrides a standard module's operator (a hand of cards drawn from Nat, which the model
   makes finite), and `NoCard = NoCard` makes the unbounded CHOOSE, which TLC cannot
   evaluate, a model value. Both are then constants for TLC, and for the generated code. *)
EXTENDS Naturals, FiniteSets

NoCard == CHOOSE c : c \notin Nat

VARIABLES hand, last

vars == << hand, last >>

TypeOK == hand \subseteq Nat /\ (last \in Nat \/ last = NoCard)

Init == hand = {} /\ last = NoCard

Draw == \E c \in Nat \ hand : hand' = hand \cup {c} /\ last' = c

Discard == \E c \in hand : hand' = hand \ {c} /\ last' = NoCard

Next == Draw \/ Discard

Spec == Init /\ [][Next]_vars
=============================================================================
