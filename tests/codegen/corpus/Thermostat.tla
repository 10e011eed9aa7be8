----------------------------- MODULE Thermostat -----------------------------
(* Corpus spec, plain TLA+: Next applies operators to state-level arguments. TLC 2.15 does
   not follow such an application into the operator's body: it is one action named after
   the operator (Heat, Cool, even though Cool's body is a disjunction), while an operator
   applied to constant arguments is followed (Hold(1) is split into its parts Hold and
   Vent), and a disjunct that is no operator is named after the definition it is in (Next).
   A room's temperature goes up while the heater is on, down while it is off. *)
EXTENDS Naturals

CONSTANT Max

VARIABLES temp, heater

vars == << temp, heater >>

TypeOK == temp \in 0 .. Max /\ heater \in BOOLEAN

Init == temp = 0 /\ heater = FALSE

Heat(t) == heater /\ t < Max /\ temp' = t + 1 /\ UNCHANGED heater

Cool(t, by) == \/ ~heater /\ t >= by /\ temp' = t - by /\ UNCHANGED heater
               \/ heater /\ t = Max /\ heater' = FALSE /\ UNCHANGED temp

Vent == temp = Max /\ temp' = temp - 1 /\ UNCHANGED heater

Hold(low) == \/ ~heater /\ temp < low + 1 /\ heater' = TRUE /\ UNCHANGED temp
             \/ Vent

Next == \/ Heat(temp)
        \/ \E by \in {1, 2} : Cool(temp, by)
        \/ Hold(1)
        \/ LET now == temp IN now = 1 /\ heater /\ heater' = FALSE /\ UNCHANGED temp

Spec == Init /\ [][Next]_vars
=============================================================================
