----------------------------- MODULE Commit -----------------------------
(* Corpus spec, plain TLA+: two-phase commit of a set of participants by one coordinator,
   over a set of messages that only grows. Next mixes actions with no parameter and
   actions over \E p \in Parts (each one a process set in the generated code). *)
CONSTANT Parts

VARIABLES part, coord, ready, sent

vars == << part, coord, ready, sent >>

Msgs == [kind : {"ready"}, from : Parts] \cup [kind : {"commit", "abort"}]

TypeOK == /\ part \in [Parts -> {"busy", "ready", "committed", "aborted"}]
          /\ coord \in {"collecting", "decided"}
          /\ ready \subseteq Parts
          /\ sent \subseteq Msgs

Agreement == \A p, q \in Parts : ~(part[p] = "aborted" /\ part[q] = "committed")

Init == /\ part = [p \in Parts |-> "busy"]
        /\ coord = "collecting"
        /\ ready = {}
        /\ sent = {}

CoordHears(p) == /\ coord = "collecting"
                 /\ [kind |-> "ready", from |-> p] \in sent
                 /\ ready' = ready \cup {p}
                 /\ UNCHANGED << part, coord, sent >>

CoordCommits == /\ coord = "collecting"
                /\ ready = Parts
                /\ coord' = "decided"
                /\ sent' = sent \cup {[kind |-> "commit"]}
                /\ UNCHANGED << part, ready >>

CoordAborts == /\ coord = "collecting"
               /\ coord' = "decided"
               /\ sent' = sent \cup {[kind |-> "abort"]}
               /\ UNCHANGED << part, ready >>

GetReady(p) == /\ part[p] = "busy"
               /\ part' = [part EXCEPT ![p] = "ready"]
               /\ sent' = sent \cup {[kind |-> "ready", from |-> p]}
               /\ UNCHANGED << coord, ready >>

GiveUp(p) == /\ part[p] = "busy"
             /\ part' = [part EXCEPT ![p] = "aborted"]
             /\ UNCHANGED << coord, ready, sent >>

Learn(p) == \/ /\ [kind |-> "commit"] \in sent
               /\ part' = [part EXCEPT ![p] = "committed"]
               /\ UNCHANGED << coord, ready, sent >>
            \/ /\ [kind |-> "abort"] \in sent
               /\ part' = [part EXCEPT ![p] = "aborted"]
               /\ UNCHANGED << coord, ready, sent >>

Next == \/ CoordCommits \/ CoordAborts
        \/ \E p \in Parts : CoordHears(p) \/ GetReady(p) \/ GiveUp(p) \/ Learn(p)

Spec == Init /\ [][Next]_vars
=============================================================================
