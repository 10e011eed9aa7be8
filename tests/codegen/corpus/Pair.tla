-------------------------------- MODULE Pair --------------------------------
(* Corpus spec, refused by its cfg: TLC 2.15's cfg reader takes no tuple as a constant's
   value (only numbers, strings, Booleans, model values and sets of them), so generation
   refuses the cfg with TLC's words. *)
EXTENDS Naturals

CONSTANT Bounds

VARIABLE x

Init == x = Bounds[1]
Next == x < Bounds[2] /\ x' = x + 1
=============================================================================
