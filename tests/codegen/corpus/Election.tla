----------------------------- MODULE Election -----------------------------
(* Corpus spec, plain TLA+ with an unnamed INSTANCE: leader election on a ring. Each node
   starts by sending its id to its successor; a node forwards ids larger than its own,
   drops smaller ones, and is elected when its own id comes back. The run ends with every
   inbox empty: a deadlock TLC must not report (CHECK_DEADLOCK FALSE). *)
EXTENDS Naturals, FiniteSets

CONSTANT N

INSTANCE RingMath

VARIABLES inbox, elected

vars == << inbox, elected >>

Id(n) == ((n * 2) % N) + 1

TypeOK == inbox \in [Nodes -> SUBSET Nodes] /\ elected \subseteq Nodes

AtMostOneLeader == Cardinality(elected) <= 1

Init == /\ inbox = [n \in Nodes |-> {Id(Pred(n))}]
        /\ elected = {}

Receive(n) == \E m \in inbox[n] :
                /\ inbox' = IF m > Id(n)
                              THEN [inbox EXCEPT ![n] = @ \ {m}, ![Succ(n)] = @ \cup {m}]
                              ELSE [inbox EXCEPT ![n] = @ \ {m}]
                /\ elected' = IF m = Id(n) THEN elected \cup {n} ELSE elected

Next == \E n \in Nodes : Receive(n)

Spec == Init /\ [][Next]_vars
=============================================================================
