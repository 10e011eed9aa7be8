---------------------------- MODULE JugPuzzle ----------------------------
(* Corpus spec (tests/codegen/test_corpus.py), plain TLA+: two jugs holding up to Small and
   Big litres, filled, emptied or poured into each other. Next is a disjunction of named
   actions with no parameters. *)
EXTENDS Naturals

CONSTANTS Small, Big
VARIABLES small, big

vars == << small, big >>
Lesser(m, n) == IF m < n THEN m ELSE n

TypeOK == small \in 0..Small /\ big \in 0..Big

Init == small = 0 /\ big = 0

FillSmall == small' = Small /\ big' = big
FillBig == big' = Big /\ small' = small
EmptySmall == small' = 0 /\ UNCHANGED big
EmptyBig == big' = 0 /\ UNCHANGED small
SmallIntoBig == LET poured == Lesser(small, Big - big)
                IN  small' = small - poured /\ big' = big + poured
BigIntoSmall == LET poured == Lesser(big, Small - small)
                IN  big' = big - poured /\ small' = small + poured

Next == \/ FillSmall \/ FillBig
        \/ EmptySmall \/ EmptyBig
        \/ SmallIntoBig \/ BigIntoSmall

Spec == Init /\ [][Next]_vars
=============================================================================
