------------------------------ MODULE Labelled ------------------------------
(* Corpus spec, plain TLA+ with TLA+ labels (`l:: e`, names for proofs): labels change
   nothing, neither the steps nor the actions' names; TLC looks through them (ack:: Ack is
   the action Ack). A sender and a receiver with an alternating bit. *)
EXTENDS Naturals

VARIABLES bit, got, sent

vars == << bit, got, sent >>

TypeOK == bit \in {0, 1} /\ got \in 0 .. 2 /\ sent \in 0 .. 2

Init == bit = 0 /\ got = 0 /\ sent = 0

Send == /\ guard:: sent < 2 /\ sent = got
        /\ sent' = sent + 1
        /\ UNCHANGED << bit, got >>

Ack == /\ got < sent
       /\ flip:: bit' = 1 - bit
       /\ got' = got + 1
       /\ UNCHANGED sent

Next == \/ send:: Send
        \/ ack:: Ack
        \/ again:: (got = 2 /\ sent = 2 /\ got' = 0 /\ sent' = 0 /\ UNCHANGED bit)

Spec == Init /\ [][Next]_vars
=============================================================================
