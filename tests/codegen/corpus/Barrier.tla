------------------------------ MODULE Barrier ------------------------------
(* Corpus spec, plain TLA+ with a named INSTANCE: processes arrive at a barrier, counted by
   Arrivals (a Tally over the variable arrived), and pass it once all have arrived. The run
   ends with everyone through: CHECK_DEADLOCK FALSE. *)
EXTENDS Naturals, FiniteSets

CONSTANT Procs

VARIABLES stage, arrived

vars == << stage, arrived >>

Arrivals == INSTANCE Tally WITH count <- arrived, Limit <- Cardinality(Procs)

TypeOK == stage \in [Procs -> {"work", "wait", "done"}] /\ arrived \in 0..Cardinality(Procs)

NoEarlyPass == \A p \in Procs : stage[p] = "done" => Arrivals!Full

Init == stage = [p \in Procs |-> "work"] /\ Arrivals!Zero

Arrive(p) == /\ stage[p] = "work"
             /\ Arrivals!Incr
             /\ stage' = [stage EXCEPT ![p] = "wait"]

Pass(p) == /\ stage[p] = "wait"
           /\ Arrivals!Full
           /\ stage' = [stage EXCEPT ![p] = "done"]
           /\ UNCHANGED arrived

Next == \E p \in Procs : Arrive(p) \/ Pass(p)

Spec == Init /\ [][Next]_vars
=============================================================================
