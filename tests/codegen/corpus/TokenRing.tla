----------------------------- MODULE TokenRing -----------------------------
(* Corpus spec, plain TLA+: termination detection on a ring with a circulating token, in the
   style of Dijkstra's, written for this project. A busy node may wake another; a node that
   wakes one ahead of the token turns dirty. The token moves from node N-1 down to node 0
   past idle nodes, picking up their dirt; node 0 restarts a dirty round. `holder`, the
   token's position, is an integer whose domain (0..N-1, TypeOK) is much narrower than its
   kind: the near-miss probes of conformance must keep it there (an invariant reads
   busy[holder]), or TLC cannot evaluate them. *)
EXTENDS Naturals

CONSTANT N

Nodes == 0 .. N - 1

VARIABLES busy, tint, holder, tokenTint

vars == << busy, tint, holder, tokenTint >>

TypeOK == /\ busy \in [Nodes -> BOOLEAN]
          /\ tint \in [Nodes -> {"clean", "dirty"}]
          /\ holder \in Nodes
          /\ tokenTint \in {"clean", "dirty"}

Detected == holder = 0 /\ tokenTint = "clean" /\ tint[0] = "clean" /\ ~busy[0]

\* When the token says so, every node is idle.
Safe == Detected => \A n \in Nodes : ~busy[n]

\* The token's holder is idle or the round is already spoilt (read at the holder).
HolderSeen == busy[holder] => (tokenTint = "dirty" \/ tint[holder] = "dirty" \/ holder < N - 1
                               \/ \E n \in 0 .. holder : tint[n] = "dirty" \/ busy[n])

Init == /\ busy = [n \in Nodes |-> n = 0]
        /\ tint = [n \in Nodes |-> "clean"]
        /\ holder = 0
        /\ tokenTint = "dirty"

Wake(i, j) == /\ busy[i] /\ ~busy[j]
              /\ busy' = [busy EXCEPT ![j] = TRUE]
              /\ tint' = IF j > i THEN [tint EXCEPT ![i] = "dirty"] ELSE tint
              /\ UNCHANGED << holder, tokenTint >>

Rest(i) == /\ busy[i]
           /\ busy' = [busy EXCEPT ![i] = FALSE]
           /\ UNCHANGED << tint, holder, tokenTint >>

Pass == /\ holder > 0 /\ ~busy[holder]
        /\ holder' = holder - 1
        /\ tokenTint' = IF tint[holder] = "dirty" THEN "dirty" ELSE tokenTint
        /\ tint' = [tint EXCEPT ![holder] = "clean"]
        /\ UNCHANGED busy

Restart == /\ holder = 0 /\ ~Detected
           /\ holder' = N - 1
           /\ tokenTint' = "clean"
           /\ tint' = [tint EXCEPT ![0] = "clean"]
           /\ UNCHANGED busy

Next == \/ \E i, j \in Nodes : Wake(i, j)
        \/ \E i \in Nodes : Rest(i)
        \/ Pass
        \/ Restart

Spec == Init /\ [][Next]_vars
=============================================================================
