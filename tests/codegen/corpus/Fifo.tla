------------------------------ MODULE Fifo ------------------------------
(* Corpus helper (no model of its own): a first-in first-out buffer of at most Cap items,
   as operators on a sequence; instantiated by BoundedQueue. *)
EXTENDS Naturals, Sequences

CONSTANT Cap

IsFull(q) == Len(q) >= Cap
IsEmpty(q) == q = << >>
Push(q, x) == Append(q, x)
=============================================================================
