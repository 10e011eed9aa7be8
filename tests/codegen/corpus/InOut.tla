------------------------------- MODULE InOut -------------------------------
(* Corpus spec, refused: a queue's ends are called `in` and `out`. TLA+ and TLC take the
   names, but `in` is a Python keyword and cannot be a field of the generated State:
   generation refuses it at its declaration (rename it). *)
EXTENDS Naturals

VARIABLES in, out

Init == in = 0 /\ out = 0
Push == in < 2 /\ in' = in + 1 /\ UNCHANGED out
Pop == out < in /\ out' = out + 1 /\ UNCHANGED in
Next == Push \/ Pop
=============================================================================
