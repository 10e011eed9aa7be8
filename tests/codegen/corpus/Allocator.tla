---------------------------- MODULE Allocator ----------------------------
(* Corpus spec, plain TLA+: clients ask for sets of resources, are granted parts of what
   they asked for and give them back. Next quantifies over two variables at once
   (\E c \in Clients, S \in SUBSET Resources), so its actions belong to no process; the
   bound variable c is also the name generated code gives its constants. *)
EXTENDS FiniteSets

CONSTANTS Clients, Resources

VARIABLES wants, holds

vars == << wants, holds >>

Free == Resources \ UNION {holds[c] : c \in Clients}

TypeOK == /\ wants \in [Clients -> SUBSET Resources]
          /\ holds \in [Clients -> SUBSET Resources]

Exclusive == \A c, d \in Clients : c # d => holds[c] \cap holds[d] = {}

Init == wants = [c \in Clients |-> {}] /\ holds = [c \in Clients |-> {}]

Ask(c, S) == /\ wants[c] = {} /\ holds[c] = {}
             /\ S # {}
             /\ wants' = [wants EXCEPT ![c] = S]
             /\ UNCHANGED holds

Grant(c, S) == /\ S # {}
               /\ S \subseteq Free \cap wants[c]
               /\ holds' = [holds EXCEPT ![c] = @ \cup S]
               /\ wants' = [wants EXCEPT ![c] = @ \ S]

GiveBack(c, S) == /\ S # {}
                  /\ S \subseteq holds[c]
                  /\ holds' = [holds EXCEPT ![c] = @ \ S]
                  /\ UNCHANGED wants

Next == \E c \in Clients, S \in SUBSET Resources : Ask(c, S) \/ Grant(c, S) \/ GiveBack(c, S)

Spec == Init /\ [][Next]_vars
=============================================================================
