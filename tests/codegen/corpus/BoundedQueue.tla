--------------------------- MODULE BoundedQueue ---------------------------
(* Corpus spec, PlusCal with a named INSTANCE: a producer and a consumer (two single
   processes, each one `while TRUE` label) share a queue of at most Size items through
   Buf, a Fifo. *)
EXTENDS Naturals, Sequences

CONSTANTS Size, Items

Buf == INSTANCE Fifo WITH Cap <- Size

(* --algorithm BoundedQueue
variables queue = << >>;

process producer = "producer"
begin
  put:
    while TRUE do
      with item \in Items do
        await ~Buf!IsFull(queue);
        queue := Buf!Push(queue, item);
      end with;
    end while;
end process;

process consumer = "consumer"
variable got = "nothing";
begin
  get:
    while TRUE do
      await ~Buf!IsEmpty(queue);
      got := Head(queue);
      queue := Tail(queue);
    end while;
end process;
end algorithm *)

\* BEGIN TRANSLATION PCal-55fda346a90b80411a03643c972d72fe
VARIABLES queue, got

vars == << queue, got >>

ProcSet == {"producer"} \cup {"consumer"}

Init == (* Global variables *)
        /\ queue = << >>
        (* Process consumer *)
        /\ got = "nothing"

producer == /\ \E item \in Items:
                 /\ ~Buf!IsFull(queue)
                 /\ queue' = Buf!Push(queue, item)
            /\ got' = got

consumer == /\ ~Buf!IsEmpty(queue)
            /\ got' = Head(queue)
            /\ queue' = Tail(queue)

Next == producer \/ consumer

Spec == Init /\ [][Next]_vars

\* END TRANSLATION TLA-44fbaf4c89560bfe86047597dd82d2dd

Bounded == Len(queue) <= Size
=============================================================================
