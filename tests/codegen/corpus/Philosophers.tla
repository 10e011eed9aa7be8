--------------------------- MODULE Philosophers ---------------------------
(* Corpus spec, PlusCal: N dining philosophers, each taking the left fork, then the right.
   Everyone holding a left fork is a real deadlock, which this model does not check for
   (CHECK_DEADLOCK FALSE); Exclusive says no fork is held twice. *)
EXTENDS Naturals

CONSTANT N

(* --algorithm Philosophers
variables holder = [f \in 0..N-1 |-> N];

define
  Left(p) == p
  Right(p) == (p + 1) % N
  Exclusive == \A p \in 0..N-1 : holder[Left(p)] = p \/ holder[Right(p)] # p \/ N = 1
end define;

process phil \in 0..N-1
begin
  think:
    while TRUE do
  takeLeft:
      await holder[Left(self)] = N;
      holder[Left(self)] := self;
  takeRight:
      await holder[Right(self)] = N;
      holder[Right(self)] := self;
  eat:
      holder := [holder EXCEPT ![Left(self)] = N, ![Right(self)] = N];
    end while;
end process;
end algorithm *)

\* BEGIN TRANSLATION PCal-3c4d9fac8e6bd61e8a074a10981534c5
VARIABLES holder, pc

(* define statement *)
Left(p) == p
Right(p) == (p + 1) % N
Exclusive == \A p \in 0..N-1 : holder[Left(p)] = p \/ holder[Right(p)] # p \/ N = 1


vars == << holder, pc >>

ProcSet == (0..N-1)

Init == (* Global variables *)
        /\ holder = [f \in 0..N-1 |-> N]
        /\ pc = [self \in ProcSet |-> "think"]

think(self) == /\ pc[self] = "think"
               /\ pc' = [pc EXCEPT ![self] = "takeLeft"]
               /\ UNCHANGED holder

takeLeft(self) == /\ pc[self] = "takeLeft"
                  /\ holder[Left(self)] = N
                  /\ holder' = [holder EXCEPT ![Left(self)] = self]
                  /\ pc' = [pc EXCEPT ![self] = "takeRight"]

takeRight(self) == /\ pc[self] = "takeRight"
                   /\ holder[Right(self)] = N
                   /\ holder' = [holder EXCEPT ![Right(self)] = self]
                   /\ pc' = [pc EXCEPT ![self] = "eat"]

eat(self) == /\ pc[self] = "eat"
             /\ holder' = [holder EXCEPT ![Left(self)] = N, ![Right(self)] = N]
             /\ pc' = [pc EXCEPT ![self] = "think"]

phil(self) == think(self) \/ takeLeft(self) \/ takeRight(self) \/ eat(self)

Next == (\E self \in 0..N-1: phil(self))

Spec == Init /\ [][Next]_vars

\* END TRANSLATION TLA-0b7603cb4d649e2bdf0f5e329cc7f3a8
=============================================================================
