------------------------------ MODULE Mutex ------------------------------
(* Corpus spec, PlusCal: Peterson's mutual exclusion for two processes (a process set). *)
EXTENDS Naturals

(* --algorithm Mutex
variables wants = [i \in {0, 1} |-> FALSE], turn = 0;

process proc \in {0, 1}
begin
  idle:
    while TRUE do
  flagUp:
      wants[self] := TRUE;
  defer:
      turn := 1 - self;
  wait:
      await ~wants[1 - self] \/ turn = self;
  critical:
      skip;
  leave:
      wants[self] := FALSE;
    end while;
end process;
end algorithm *)

\* BEGIN TRANSLATION - the hash of the PCal code: PCal-e0cc9e2c50c677991467cc5ae9e51d77
VARIABLES wants, turn, pc

vars == << wants, turn, pc >>

ProcSet == ({0, 1})

Init == (* Global variables *)
        /\ wants = [i \in {0, 1} |-> FALSE]
        /\ turn = 0
        /\ pc = [self \in ProcSet |-> "idle"]

idle(self) == /\ pc[self] = "idle"
              /\ pc' = [pc EXCEPT ![self] = "flagUp"]
              /\ UNCHANGED << wants, turn >>

flagUp(self) == /\ pc[self] = "flagUp"
                /\ wants' = [wants EXCEPT ![self] = TRUE]
                /\ pc' = [pc EXCEPT ![self] = "defer"]
                /\ turn' = turn

defer(self) == /\ pc[self] = "defer"
               /\ turn' = 1 - self
               /\ pc' = [pc EXCEPT ![self] = "wait"]
               /\ wants' = wants

wait(self) == /\ pc[self] = "wait"
              /\ ~wants[1 - self] \/ turn = self
              /\ pc' = [pc EXCEPT ![self] = "critical"]
              /\ UNCHANGED << wants, turn >>

critical(self) == /\ pc[self] = "critical"
                  /\ TRUE
                  /\ pc' = [pc EXCEPT ![self] = "leave"]
                  /\ UNCHANGED << wants, turn >>

leave(self) == /\ pc[self] = "leave"
               /\ wants' = [wants EXCEPT ![self] = FALSE]
               /\ pc' = [pc EXCEPT ![self] = "idle"]
               /\ turn' = turn

proc(self) == idle(self) \/ flagUp(self) \/ defer(self) \/ wait(self)
                 \/ critical(self) \/ leave(self)

Next == (\E self \in {0, 1}: proc(self))

Spec == Init /\ [][Next]_vars

\* END TRANSLATION - the hash of the generated TLA code (remove to silence divergence warnings): TLA-85003b5e847af6c2283dfcb50a6d203a

MutualExclusion == ~(pc[0] = "critical" /\ pc[1] = "critical")
=============================================================================
