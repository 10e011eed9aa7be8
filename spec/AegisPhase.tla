----------------------------- MODULE AegisPhase -----------------------------
(***************************************************************************)
(* The Aegis phase machine: the single source of truth of the controller  *)
(* (master) and the agent (worker side).  codegen/ turns the translation   *)
(* below into aegis/generated/, which aegis/runtime/ executes.             *)
(*                                                                         *)
(* Variables mirror the Aegis CR (design section 3):                       *)
(*   global   phase, shouldQuit, recoverCount                              *)
(*   per pod  innerPhase, finished, retries, podRestarted                  *)
(* plus the message layer (design section 4, "P1"): the master's sequence  *)
(* number, its dedup watermark per worker, the reports in flight, and the  *)
(* agent's view (agentSeq, agentState).                                    *)
(*                                                                         *)
(* How the runtime reads this spec (design section 8):                     *)
(* - Every PlusCal label is one atomic step and one generated action.     *)
(*   Each step of the controller, of the agents and of the environment is  *)
(*   its own single-label process, so that each of the original design's   *)
(*   branches has its own name in the code, the logs and TLC's traces.     *)
(* - Environment processes (Env*, Reschedule) are observations: the        *)
(*   runtime applies them with the parameters it observed.                 *)
(* - Controller and agent processes are decisions, except the inputs they  *)
(*   read with `with`: which message arrived (m), which pod (w), and what  *)
(*   a piece of work ended with (outcome).  Every `with` variable is such  *)
(*   an input; the spec has no policy choice left to the runtime.          *)
(*                                                                         *)
(* The original design's controller loop had 8 branches (design sec. 5):   *)
(*   1 init                  -> Init (the CR is created in phase Pending)  *)
(*   2 normal advance        -> Advance                                    *)
(*   3 pod restart in run    -> RestartInRun                               *)
(*   4 pod restart elsewhere -> RestartOutsideRun                          *)
(*   5 restarting done       -> RestartDone                                *)
(*   6 retries exhausted     -> RetriesExhausted                           *)
(*   7 failed wrap-up        -> FailedWrapUp                               *)
(*   8 retries align         -> AlignRetries                               *)
(* and its 3 environment branches:                                         *)
(*   a worker suddenly Finishes -> EnvDuplicate (a report delivered again) *)
(*   a pod suddenly restarts    -> EnvPodRestart                           *)
(*   shouldQuit set from outside -> EnvQuit                                *)
(* The message handler (handleError, dedup) is Receive; the operator's     *)
(* quit is acted on by QuitRequested.                                      *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS
    Workers,      \* the pods of the job (model values in TLC, pod names at run time)
    MaxRetry,     \* the one number a user sets: restarts allowed before the job fails
    InitSeqNum,   \* the master's first sequence number
    FaultBudget,  \* how many environment events (faults, duplicates, quits) may happen
    MaxSeqGap     \* bound of the state CONSTRAINT on sequence numbers (see SeqBound)

ASSUME MaxRetry \in Nat /\ InitSeqNum \in Nat /\ FaultBudget \in Nat /\ MaxSeqGap \in Nat
ASSUME Workers # {}

Phases == {"Pending", "BootChecking", "RunCommand", "Restarting",
           "Troubleshooting", "Succeed", "Failed"}

\* Phases in which the master broadcasts an order that every agent works on.
OrderPhases == {"BootChecking", "RunCommand", "Troubleshooting"}

\* Phases in which finished workers let the job move on (design: NextPhase).
AdvancePhases == {"Pending", "BootChecking", "RunCommand", "Troubleshooting"}

NextPhase(p) == CASE p = "Pending"         -> "BootChecking"
                  [] p = "BootChecking"    -> "RunCommand"
                  [] p = "RunCommand"      -> "Succeed"
                  [] p = "Troubleshooting" -> "RunCommand"
                  [] OTHER                 -> p

Min(a, b) == IF a < b THEN a ELSE b

AgentStates == {"Fresh", "Ready", "Exited"}

(* --algorithm AegisPhase {
variables
    \* ---- the CR, global part ----
    phase = "Pending",
    shouldQuit = FALSE,
    recoverCount = 0,
    \* ---- the CR, per pod ----
    innerPhase = [w \in Workers |-> "Pending"],
    finished = [w \in Workers |-> FALSE],
    retries = [w \in Workers |-> 0],
    podRestarted = [w \in Workers |-> FALSE],
    \* ---- the master's message layer ----
    masterSeq = InitSeqNum,                       \* seq of the current order
    lastFinishSeq = [w \in Workers |-> InitSeqNum - 1], \* dedup watermark
    msgs = {},                                    \* reports in flight to the master
    \* ---- the agents ----
    agentSeq = [w \in Workers |-> InitSeqNum],    \* seq of the last order received
    agentState = [w \in Workers |-> "Fresh"],
    \* ---- the slow-node path (design section 6) ----
    slow = [w \in Workers |-> FALSE],            \* marked slow/hung in this order (hang)
    evict = [w \in Workers |-> FALSE],           \* hangWithQuit decided: evict at a safe point
    checkpointed = FALSE,                         \* a checkpoint completed since the decision
    \* ---- the environment ----
    faults = FaultBudget,
    \* ---- ghosts for the P1 invariants ----
    prevMasterSeq = InitSeqNum,                   \* masterSeq before its last change
    finishCount = [w \in Workers |-> 0],         \* Finishes processed this round
    \* ---- ghost for the retry promises ----
    countedFailures = 0;                          \* failures counted (count_failure)

define {
    Terminated == \/ phase = "Succeed"
                  \/ phase = "Failed" /\ shouldQuit /\ recoverCount = MaxRetry + 1

    Exhausted == \E w \in Workers : retries[w] > MaxRetry

    AllReady == \A w \in Workers : finished[w] /\ ~podRestarted[w]

    \* Restarted pods the controller has not reacted to yet.
    UnseenRestarts == {x \in Workers : podRestarted[x] /\ innerPhase[x] # "Restarting"}

    \* ---- when each controller decision applies (its guard) ----
    CanAdvance == phase \in AdvancePhases /\ AllReady
                  /\ ~(phase = "Troubleshooting" /\ Exhausted)
    CanRestartInRun == phase = "RunCommand" /\ UnseenRestarts # {}
    CanRestartOutsideRun == phase # "RunCommand" /\ ~Terminated /\ UnseenRestarts # {}
    CanRestartDone == phase = "Restarting"
                      /\ \A w \in Workers : ~podRestarted[w] /\ agentState[w] # "Exited"
    CanFailExhausted == phase = "Troubleshooting" /\ AllReady /\ Exhausted
    CanWrapUp == phase = "Failed" /\ ~(shouldQuit /\ recoverCount = MaxRetry + 1)
    CanAlign == phase \in {"BootChecking", "RunCommand"}
                /\ \E w \in Workers : retries[w] # recoverCount
    CanQuit == shouldQuit /\ phase \notin {"Succeed", "Failed"}

    \* The slow-node path: a pod marked slow (hang) is evicted -- at the next
    \* checkpoint -- only while the job can afford it: an eviction is a pod
    \* restart and costs one retry, and a slow job beats a failed one.
    Evicting == {x \in Workers : evict[x]}
    SlowToEvict == {x \in Workers : slow[x] /\ ~evict[x] /\ ~podRestarted[x]}
    CanHangWithQuit == phase = "RunCommand" /\ ~shouldQuit /\ SlowToEvict # {}
                       /\ recoverCount + Cardinality(Evicting) < MaxRetry
    \* An evicted pod's agent has left (AgentEvict): restart it like a crashed pod.
    Evicted == {x \in Workers : evict[x] /\ agentState[x] = "Exited"}
    CanEvictSlow == phase = "RunCommand" /\ Evicted # {}

    \* The controller has no decision left to take.  Like the runtime, which
    \* takes the next observation (a report, a pod event, an agent's work
    \* ending) only after it has applied every decision and published the
    \* resulting order, observations happen only in a quiescent state; an
    \* agent never sees a half-decided order.
    Quiescent == ~(CanAdvance \/ CanRestartInRun \/ CanRestartOutsideRun
                   \/ CanRestartDone \/ CanFailExhausted \/ CanWrapUp
                   \/ CanAlign \/ CanQuit \/ CanHangWithQuit \/ CanEvictSlow)


    \* The dedup rule for Finish (and for the ACK that finishes Pending): only
    \* the current order's, and only once.  The seed let "a Finish already
    \* deduplicated while PENDING" through, because a restarted pod re-ACKs
    \* with the same sequence number; here the restart itself resets the
    \* pod's watermark (forget_incarnation), which covers every phase.
    FreshFinish(m) == m.seq = masterSeq /\ m.seq > lastFinishSeq[m.from]

    \* Every fault (an Error report, a pod restart, a duplicate, a quit)
    \* spends one unit of the environment's FaultBudget.
    Outcomes == IF faults > 0 THEN {"Finish", "Error"} ELSE {"Finish"}

    \* ---------------- P0 invariants ----------------
    ValidPhase == phase \in Phases

    ValidInnerPhase == \A w \in Workers : innerPhase[w] \in Phases

    \* recoverCount counts the restarts used; it passes MaxRetry only once
    \* the job has failed (FailedWrapUp sets it to MaxRetry + 1).
    RecoverCountBound == /\ recoverCount <= MaxRetry + 1
                         /\ phase # "Failed" => recoverCount <= MaxRetry

    RetriesBound == \A w \in Workers : retries[w] <= MaxRetry + 1

    \* An unfinished, not restarted worker is in the global phase; during
    \* Restarting it may still be in the predecessor RunCommand.
    PhaseConsistency ==
        \A w \in Workers :
            (~finished[w] /\ ~podRestarted[w]) =>
                \/ innerPhase[w] = phase
                \/ phase = "Restarting" /\ innerPhase[w] = "RunCommand"

    \* ---------------- P1 invariants ----------------
    NoFinishDoubleProcessed == \A w \in Workers : finishCount[w] <= 1

    MasterSeqNumMonotonic == prevMasterSeq <= masterSeq

    WorkerSeqNumBound == /\ \A w \in Workers : agentSeq[w] <= masterSeq
                         /\ \A m \in msgs : m.seq <= masterSeq

    \* Only a Finish for the current order ever marks a worker finished.
    StaleFinishRejected == \A w \in Workers : finished[w] => lastFinishSeq[w] = masterSeq

    \* ---------------- slow-node invariants ----------------
    \* Only a pod marked slow is ever chosen for eviction.
    EvictOnlySlow == \A w \in Workers : evict[w] => slow[w]

    \* A pod chosen for eviction leaves only after a checkpoint completed.
    EvictAtCheckpoint == \A w \in Workers : (evict[w] /\ agentState[w] = "Exited") => checkpointed

    \* Evictions decided never cost more retries than the job has left.
    EvictionAffordable == phase = "RunCommand" => recoverCount + Cardinality(Evicting) <= MaxRetry

    \* ---------------- the promises users rely on ----------------
    \* Each is written out in full, without the operators the decisions use
    \* (Exhausted, Min, Evicted, ...), so that a bug in one of those cannot
    \* change the promise with it.  spec/README.md lists the promise each pins.

    \* A job fails only when some pod used more than MaxRetry retries, or
    \* somebody asked it to quit.
    FailedOnlyWhenExhaustedOrQuit ==
        phase = "Failed" => (shouldQuit \/ \E w \in Workers : retries[w] > MaxRetry)

    \* Once more than MaxRetry failures were counted (or a pod is over its
    \* retries) the command never runs again and the job never succeeds.
    NoRunAfterRetriesExhausted ==
        (countedFailures > MaxRetry \/ \E w \in Workers : retries[w] > MaxRetry)
            => phase \notin {"BootChecking", "RunCommand", "Succeed"}

    \* recoverCount is the number of counted failures, capped at MaxRetry,
    \* until the failed job is wrapped up (MaxRetry + 1).
    RecoverCountCountsFailures ==
        \/ recoverCount = IF countedFailures < MaxRetry THEN countedFailures ELSE MaxRetry
        \/ phase = "Failed" /\ recoverCount = MaxRetry + 1

    \* A pod counts as finished only once its agent finished the current order's
    \* work (or, in Pending, joined): a report of another order, a duplicate or
    \* a replaced incarnation's report never stands in for the work.
    FinishedOnlyWhenDone ==
        \A w \in Workers : (finished[w] /\ ~podRestarted[w]) => agentSeq[w] = masterSeq

    \* A completed checkpoint is a safe point only for an eviction pending in
    \* the current RunCommand order.
    SafePointOnlyForAnEviction ==
        (phase = "RunCommand" /\ checkpointed) => \E w \in Workers : evict[w]

    \* A pod leaves for its eviction only while the command runs, where evictSlow
    \* restarts it and charges it one retry (with EvictionCostsOneRetry).
    EvictionChargedInRun ==
        \A w \in Workers : (evict[w] /\ agentState[w] = "Exited") => phase = "RunCommand"

    \* ---- action properties (checked by TLC as [][A]_v PROPERTYs) ----
    \* One failure counted in RunCommand: the job leaves RunCommand, one pod's
    \* retries + 1, recoverCount + 1 capped at MaxRetry.
    CountedFailure ==
        /\ phase = "RunCommand"
        /\ phase' \in {"Restarting", "Troubleshooting"}
        /\ countedFailures' = countedFailures + 1
        /\ \E w \in Workers : retries' = [retries EXCEPT ![w] = @ + 1]
        /\ recoverCount' = IF recoverCount < MaxRetry THEN recoverCount + 1 ELSE MaxRetry

    \* Before BootChecking or RunCommand every pod gets the job's count.
    RetriesAligned ==
        /\ phase \in {"BootChecking", "RunCommand"}
        /\ retries' = [w \in Workers |-> recoverCount]
        /\ UNCHANGED <<recoverCount, countedFailures>>

    \* The failed job is wrapped up: recoverCount shows MaxRetry + 1.
    FailureWrappedUp ==
        /\ phase = "Failed"
        /\ recoverCount' = MaxRetry + 1
        /\ UNCHANGED <<retries, countedFailures>>

    \* retries and recoverCount change only by a failure counted in
    \* RunCommand (or by the alignment and the wrap-up, which count nothing).
    RetriesMoveOnlyByCountedFailures ==
        [][CountedFailure \/ RetriesAligned \/ FailureWrappedUp]_<<retries, recoverCount, countedFailures>>

    \* Every failure that ends RunCommand (a crash, an Error, an eviction)
    \* costs exactly one retry.
    FailureInRunCostsOneRetry ==
        [][(phase = "RunCommand" /\ phase' \in {"Restarting", "Troubleshooting"}) => CountedFailure]_phase

    \* An eviction (an evicted pod's agent left) costs that pod exactly one retry.
    EvictionCostsOneRetry ==
        [][\A w \in Workers :
              (evict[w] /\ agentState[w] = "Exited" /\ ~evict'[w])
                  => /\ retries'[w] = retries[w] + 1
                     /\ countedFailures' = countedFailures + 1]_evict

    \* A pod chosen for eviction is restarted only after its agent left at a
    \* completed checkpoint (a crash restarts it at once, as any crash).
    EvictionOnlyAtSafePoint ==
        [][\A w \in Workers :
              (evict[w] /\ ~podRestarted[w] /\ innerPhase[w] # "Restarting"
                  /\ innerPhase'[w] = "Restarting")
                  => checkpointed /\ agentState[w] = "Exited"]_innerPhase

    \* A job whose operator asked it to quit never ends Succeed.
    QuitNeverEndsSucceed == [][(shouldQuit \/ shouldQuit') => phase' # "Succeed"]_phase

    \* A report counts only for the incarnation that sent it: the reports of a
    \* replaced incarnation still in flight never mark its successor finished
    \* or slow, never count an Error and never make a safe point.  (A joining
    \* agent's ACK, which finishes Pending, is the new incarnation's own.)
    ReplacedIncarnationIgnored ==
        [][/\ \A w \in Workers :
                /\ (~finished[w] /\ finished'[w] /\ agentState'[w] = agentState[w])
                      => \E m \in msgs \ msgs' :
                            m.type = "Finish" /\ m.from = w /\ ~m.replaced
                /\ (~slow[w] /\ slow'[w])
                      => \E m \in msgs \ msgs' : m.type = "Hang" /\ m.from = w /\ ~m.replaced
           /\ (~checkpointed /\ checkpointed')
                 => \E m \in msgs \ msgs' : m.type = "Checkpoint" /\ ~m.replaced
           /\ (phase = "RunCommand" /\ phase' = "Troubleshooting")
                 => \E m \in msgs \ msgs' : m.type = "Error" /\ ~m.replaced
          ]_<<finished, slow, checkpointed, phase>>

    \* An operator's quit is never withdrawn.
    QuitIsNeverCleared == [][shouldQuit => shouldQuit']_shouldQuit

    \* Succeed and Failed are final.
    TerminalPhasesAreFinal == [][(phase \in {"Succeed", "Failed"}) => phase' = phase]_phase

    \* The command (re)starts only after every pod passed a check of the job:
    \* the boot check first, a diagnosis after a failure.
    CommandAfterChecks ==
        [][(phase # "RunCommand" /\ phase' = "RunCommand")
              => /\ phase \in {"BootChecking", "Troubleshooting"}
                 /\ \A w \in Workers : finished[w]]_phase

    \* A job succeeds only when every pod finished the command.
    SucceedOnlyWhenAllFinished ==
        [][phase' = "Succeed" => phase = "RunCommand" /\ \A w \in Workers : finished[w]]_phase

    \* An Error counts only for the order it was sent under, and is charged
    \* to the pod that sent it.
    StaleErrorIgnored ==
        [][(phase = "RunCommand" /\ phase' = "Troubleshooting")
              => \E m \in msgs \ msgs' :
                    /\ m.type = "Error" /\ m.seq = masterSeq
                    /\ retries'[m.from] = retries[m.from] + 1]_phase

    \* A Hang report marks a pod slow only for the order it was sent under.
    StaleHangIgnored ==
        [][\A w \in Workers :
              (~slow[w] /\ slow'[w])
                  => \E m \in msgs \ msgs' :
                        m.type = "Hang" /\ m.from = w /\ m.seq = masterSeq]_slow

    \* Only a checkpoint completed after the eviction was decided is its safe
    \* point: an agent reports one only while an eviction waits for it.
    \* (A report marked replaced is an old one, not a new checkpoint.)
    CheckpointAfterDecision ==
        [][\A m \in msgs' \ msgs :
              (m.type = "Checkpoint" /\ ~m.replaced) => \E w \in Workers : evict[w]]_msgs

    \* A Checkpoint report is a safe point only for the order it was sent under.
    StaleCheckpointIgnored ==
        [][(~checkpointed /\ checkpointed')
              => \E m \in msgs \ msgs' : m.type = "Checkpoint" /\ m.seq = masterSeq]_checkpointed

    \* ---------------- state constraint ----------------
    \* MaxSeqGap is set to the largest gap reachable (2 * MaxRetry + 3), so
    \* the constraint cuts nothing today; if a change lets masterSeq grow
    \* without bound, exploration stops there and Termination fails loudly.
    SeqBound == masterSeq <= InitSeqNum + MaxSeqGap

    \* ---------------- liveness ----------------
    \* Under the fairness of the `fair process`es below (weak fairness of
    \* every controller, agent and rescheduling step; none for faults),
    \* every behaviour -- which has at most FaultBudget faults -- ends in
    \* Succeed or in a wrapped-up Failed.
    Termination == <>Terminated
}

\* Count a failure of pod w that happened in RunCommand (seed branch 3 and
\* handleError): that pod's retries + 1, recoverCount + 1 capped at MaxRetry.
macro count_failure(w) {
    retries[w] := retries[w] + 1;
    recoverCount := Min(recoverCount + 1, MaxRetry);
    countedFailures := countedFailures + 1;
}

\* The controller has seen pod w restart: the old incarnation's reports
\* still in flight are rejected (the runtime tags every report with the
\* agent's incarnation) and its dedup watermark starts afresh, so the new
\* incarnation's Finish for the same order is taken.
macro forget_incarnation(w) {
    lastFinishSeq[w] := InitSeqNum - 1;
    msgs := {m \in msgs : m.from # w};
    slow[w] := FALSE;
    evict[w] := FALSE;
}

\* Pod w's incarnation is replaced (it restarted, or it exited and was
\* rescheduled): its reports still in flight are now a replaced
\* incarnation's.  `replaced` is a ghost field that only the promise
\* ReplacedIncarnationIgnored reads; the runtime knows it from the
\* incarnation every report is tagged with.
macro incarnation_replaced(w) {
    msgs := {IF m.from = w THEN [m EXCEPT !.replaced = TRUE] ELSE m : m \in msgs};
}

\* Bump the master's sequence number: a new order goes out.  It starts with
\* no slow marks: an agent that still finds itself slow reports it again.
macro new_order() {
    prevMasterSeq := masterSeq;
    masterSeq := masterSeq + 1;
    slow := [w \in Workers |-> FALSE];
    evict := [w \in Workers |-> FALSE];
    checkpointed := FALSE;
}

\* ======================= controller (master) =======================

\* Branch 2: every worker finished and no pod restarted -> next phase.
fair process (advance = "advance") {
Advance:
    while (TRUE) {
        await CanAdvance;
        with (next = NextPhase(phase)) {
            phase := next;
            innerPhase := [w \in Workers |-> next];
            if (next \in OrderPhases) {
                new_order();
                finished := [w \in Workers |-> FALSE];
                finishCount := [w \in Workers |-> 0];
            }
        }
    }
}

\* Branch 3: a pod restarted during RunCommand -> Restarting, counted.
fair process (restartInRun = "restartInRun") {
RestartInRun:
    while (TRUE) {
        await CanRestartInRun;
        with (w \in UnseenRestarts) {
            phase := "Restarting";
            innerPhase[w] := "Restarting";
            finished[w] := FALSE;
            finishCount[w] := 0;
            forget_incarnation(w);
            count_failure(w);
        }
    }
}

\* Branch 4: a pod restarted outside RunCommand -> reset that pod only,
\* the others keep their phase, nothing counted.
fair process (restartOutsideRun = "restartOutsideRun") {
RestartOutsideRun:
    while (TRUE) {
        await CanRestartOutsideRun;
        with (w \in UnseenRestarts) {
            innerPhase[w] := "Restarting";
            finished[w] := FALSE;
            finishCount[w] := 0;
            forget_incarnation(w);
        }
    }
}

\* Branch 5: every restarted pod is back -> troubleshoot everyone.
fair process (restartDone = "restartDone") {
RestartDone:
    while (TRUE) {
        await CanRestartDone;
        phase := "Troubleshooting";
        innerPhase := [w \in Workers |-> "Troubleshooting"];
        finished := [w \in Workers |-> FALSE];
        finishCount := [w \in Workers |-> 0];
        new_order();
    }
}

\* Branch 6: diagnosis done and some pod is over its retries -> Failed.
fair process (retriesExhausted = "retriesExhausted") {
RetriesExhausted:
    while (TRUE) {
        await CanFailExhausted;
        phase := "Failed";
        innerPhase := [w \in Workers |-> "Failed"];
    }
}

\* Branch 7: a failed job is wrapped up and told to quit.
fair process (failedWrapUp = "failedWrapUp") {
FailedWrapUp:
    while (TRUE) {
        await CanWrapUp;
        recoverCount := MaxRetry + 1;
        shouldQuit := TRUE;
    }
}

\* Branch 8: in BootChecking/RunCommand every pod's retries equal recoverCount.
fair process (alignRetries = "alignRetries") {
AlignRetries:
    while (TRUE) {
        await CanAlign;
        retries := [w \in Workers |-> recoverCount];
    }
}

\* The operator (or hangWithQuit) asked the job to quit.
fair process (quitRequested = "quitRequested") {
QuitRequested:
    while (TRUE) {
        await CanQuit;
        phase := "Failed";
        innerPhase := [w \in Workers |-> "Failed"];
    }
}

\* The master takes one report (Finish or Error) off the wire.
\* Stale reports (an older sequence number) and duplicates are dropped.
fair process (receive = "receive") {
Receive:
    while (TRUE) {
        await Quiescent;
        with (m \in msgs) {
            msgs := msgs \ {m};
            if (m.type = "Finish") {
                if (phase \in OrderPhases /\ ~podRestarted[m.from] /\ FreshFinish(m)) {
                    finished[m.from] := TRUE;
                    lastFinishSeq[m.from] := m.seq;
                    finishCount[m.from] := finishCount[m.from] + 1;
                }
            } else if (m.type = "Hang") {
                \* hang: the pod is marked, nothing is killed.
                if (phase = "RunCommand" /\ m.seq = masterSeq /\ ~podRestarted[m.from]) {
                    slow[m.from] := TRUE;
                }
            } else if (m.type = "Checkpoint") {
                \* a safe point: the pods chosen for eviction may leave now.
                if (phase = "RunCommand" /\ m.seq = masterSeq /\ Evicting # {}) {
                    checkpointed := TRUE;
                }
            } else {
                \* handleError: an Error of the current order in RunCommand is
                \* counted and everyone troubleshoots; elsewhere the agent
                \* exits by itself (must-exit) and is rescheduled.
                if (phase = "RunCommand" /\ m.seq = masterSeq /\ ~podRestarted[m.from]) {
                    count_failure(m.from);
                    phase := "Troubleshooting";
                    innerPhase := [w \in Workers |-> "Troubleshooting"];
                    finished := [w \in Workers |-> FALSE];
                    finishCount := [w \in Workers |-> 0];
                    new_order();
                }
            }
        }
    }
}

\* ======================= agent (worker side) =======================

\* A (re)started agent joins the job: it subscribes and sends its ACK, a
\* request the master answers with the current order (one atomic step).
\* A restarted pod's ACK waits until the controller has seen the restart;
\* the pod then rejoins the current phase.  In Pending the ACK is the
\* worker's Finish, under the same dedup rule.
\* hangWithQuit: the master decides to evict a pod marked slow; the pod
\* keeps training until the next checkpoint completes (AgentEvict).
fair process (hangWithQuit = "hangWithQuit") {
HangWithQuit:
    while (TRUE) {
        await CanHangWithQuit;
        with (w \in SlowToEvict) {
            evict[w] := TRUE;
        }
    }
}


\* The evicted pod has left at the safe point: the job restarts it as in
\* RestartInRun (one retry counted); its replacement joins on a healthy node.
\* The peers' errors that follow its leaving arrive in Restarting and are
\* not counted.
fair process (evictSlow = "evictSlow") {
EvictSlow:
    while (TRUE) {
        await CanEvictSlow;
        with (w \in Evicted) {
            phase := "Restarting";
            innerPhase[w] := "Restarting";
            finished[w] := FALSE;
            finishCount[w] := 0;
            forget_incarnation(w);
            count_failure(w);
        }
    }
}


fair process (agentJoin = "agentJoin") {
AgentJoin:
    while (TRUE) {
        await Quiescent /\ ~Terminated;
        with (w \in {x \in Workers : agentState[x] = "Fresh"
                                      /\ (podRestarted[x] => innerPhase[x] = "Restarting")},
              ack = [from |-> w, type |-> "ACK", seq |-> agentSeq[w]]) {
            agentState[w] := "Ready";
            if (podRestarted[w]) {
                podRestarted[w] := FALSE;
                innerPhase[w] := phase;
            };
            if (phase = "Pending" /\ FreshFinish(ack)) {
                finished[w] := TRUE;
                lastFinishSeq[w] := ack.seq;
                finishCount[w] := finishCount[w] + 1;
            }
        }
    }
}

\* An agent works on the newest order (bootcheck, the command, the checks)
\* and reports how it ended: the order's arrival starts the work, its end
\* is this step.  An Error outside RunCommand means the node is bad: the
\* agent exits 1 and the Job Controller reschedules the pod.
fair process (agentWork = "agentWork") {
AgentWork:
    while (TRUE) {
        with (w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < masterSeq},
              outcome \in Outcomes) {
            await Quiescent /\ phase \in OrderPhases;
            agentSeq[w] := masterSeq;
            msgs := msgs \cup {[from |-> w, type |-> outcome, seq |-> masterSeq, replaced |-> FALSE]};
            if (outcome = "Error") {
                faults := faults - 1;
                if (phase # "RunCommand") {
                    agentState[w] := "Exited";
                }
            }
        }
    }
}

\* An agent whose training makes no progress (hang) or runs clearly slower
\* than its peers reports it while the command runs; the command is not
\* stopped.  Caused by the environment: it spends one unit of FaultBudget.
process (agentHang = "agentHang") {
AgentHang:
    while (TRUE) {
        with (w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < masterSeq}) {
            await Quiescent /\ phase = "RunCommand" /\ faults > 0 /\ ~slow[w];
            faults := faults - 1;
            msgs := msgs \cup {[from |-> w, type |-> "Hang", seq |-> masterSeq, replaced |-> FALSE]};
        }
    }
}

\* The training finished a checkpoint (aegis.checkpoint_done or the marker
\* file), seen by the agent of the rank that saved it.  Reported only while
\* an eviction waits for it; the spec does not assume one ever comes.
process (agentCheckpoint = "agentCheckpoint") {
AgentCheckpoint:
    while (TRUE) {
        with (w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < masterSeq}) {
            await Quiescent /\ phase = "RunCommand" /\ ~checkpointed /\ Evicting # {};
            msgs := msgs \cup {[from |-> w, type |-> "Checkpoint", seq |-> masterSeq,
                                 replaced |-> FALSE]};
        }
    }
}

\* A pod chosen for eviction stops its command at the safe point and exits 1:
\* the Job Controller blacklists its node and reschedules it (Reschedule).
fair process (agentEvict = "agentEvict") {
AgentEvict:
    while (TRUE) {
        with (w \in {x \in Workers : evict[x] /\ agentState[x] = "Ready"
                                      /\ agentSeq[x] < masterSeq}) {
            await Quiescent /\ phase = "RunCommand" /\ checkpointed;
            agentSeq[w] := masterSeq;
            agentState[w] := "Exited";
        }
    }
}

\* ======================= environment =======================

\* A pod is killed or restarted (node fault, eviction, OOM kill).
process (envPodRestart = "envPodRestart") {
EnvPodRestart:
    while (TRUE) {
        with (w \in Workers) {
            await Quiescent /\ faults > 0 /\ ~Terminated;
            faults := faults - 1;
            podRestarted[w] := TRUE;
            agentState[w] := "Fresh";
            agentSeq[w] := InitSeqNum;
            incarnation_replaced(w);
        }
    }
}

\* A report the master already processed is delivered again.
process (envDuplicate = "envDuplicate") {
EnvDuplicate:
    while (TRUE) {
        with (w \in {x \in Workers : lastFinishSeq[x] >= InitSeqNum}) {
            await Quiescent /\ faults > 0 /\ ~Terminated;
            faults := faults - 1;
            \* a redelivery of the last Finish taken from w: of its replaced
            \* incarnation while the controller has not seen the restart yet
            msgs := msgs \cup {[from |-> w, type |-> "Finish", seq |-> lastFinishSeq[w],
                                 replaced |-> podRestarted[w]]};
        }
    }
}

\* Somebody outside (an operator, hangWithQuit) sets ShouldQuit.
process (envQuit = "envQuit") {
EnvQuit:
    while (TRUE) {
        await Quiescent /\ faults > 0 /\ ~shouldQuit /\ ~Terminated;
        faults := faults - 1;
        shouldQuit := TRUE;
    }
}

\* The Job Controller reschedules a pod whose agent exited 1.
fair process (reschedule = "reschedule") {
Reschedule:
    while (TRUE) {
        await Quiescent /\ ~Terminated;
        with (w \in {x \in Workers : agentState[x] = "Exited"}) {
            podRestarted[w] := TRUE;
            agentState[w] := "Fresh";
            agentSeq[w] := InitSeqNum;
            incarnation_replaced(w);
        }
    }
}

\* A finished job stays finished (keeps TLC from calling it a deadlock).
fair process (jobDone = "jobDone") {
JobDone:
    while (TRUE) {
        await Terminated;
    }
}
} *)
\* BEGIN TRANSLATION - the hash of the PCal code: PCal-919733cc29d06d3dbc77eb606f2ab81d
VARIABLES phase, shouldQuit, recoverCount, innerPhase, finished, retries, 
          podRestarted, masterSeq, lastFinishSeq, msgs, agentSeq, agentState, 
          slow, evict, checkpointed, faults, prevMasterSeq, finishCount, 
          countedFailures

(* define statement *)
Terminated == \/ phase = "Succeed"
              \/ phase = "Failed" /\ shouldQuit /\ recoverCount = MaxRetry + 1

Exhausted == \E w \in Workers : retries[w] > MaxRetry

AllReady == \A w \in Workers : finished[w] /\ ~podRestarted[w]


UnseenRestarts == {x \in Workers : podRestarted[x] /\ innerPhase[x] # "Restarting"}


CanAdvance == phase \in AdvancePhases /\ AllReady
              /\ ~(phase = "Troubleshooting" /\ Exhausted)
CanRestartInRun == phase = "RunCommand" /\ UnseenRestarts # {}
CanRestartOutsideRun == phase # "RunCommand" /\ ~Terminated /\ UnseenRestarts # {}
CanRestartDone == phase = "Restarting"
                  /\ \A w \in Workers : ~podRestarted[w] /\ agentState[w] # "Exited"
CanFailExhausted == phase = "Troubleshooting" /\ AllReady /\ Exhausted
CanWrapUp == phase = "Failed" /\ ~(shouldQuit /\ recoverCount = MaxRetry + 1)
CanAlign == phase \in {"BootChecking", "RunCommand"}
            /\ \E w \in Workers : retries[w] # recoverCount
CanQuit == shouldQuit /\ phase \notin {"Succeed", "Failed"}




Evicting == {x \in Workers : evict[x]}
SlowToEvict == {x \in Workers : slow[x] /\ ~evict[x] /\ ~podRestarted[x]}
CanHangWithQuit == phase = "RunCommand" /\ ~shouldQuit /\ SlowToEvict # {}
                   /\ recoverCount + Cardinality(Evicting) < MaxRetry

Evicted == {x \in Workers : evict[x] /\ agentState[x] = "Exited"}
CanEvictSlow == phase = "RunCommand" /\ Evicted # {}






Quiescent == ~(CanAdvance \/ CanRestartInRun \/ CanRestartOutsideRun
               \/ CanRestartDone \/ CanFailExhausted \/ CanWrapUp
               \/ CanAlign \/ CanQuit \/ CanHangWithQuit \/ CanEvictSlow)







FreshFinish(m) == m.seq = masterSeq /\ m.seq > lastFinishSeq[m.from]



Outcomes == IF faults > 0 THEN {"Finish", "Error"} ELSE {"Finish"}


ValidPhase == phase \in Phases

ValidInnerPhase == \A w \in Workers : innerPhase[w] \in Phases



RecoverCountBound == /\ recoverCount <= MaxRetry + 1
                     /\ phase # "Failed" => recoverCount <= MaxRetry

RetriesBound == \A w \in Workers : retries[w] <= MaxRetry + 1



PhaseConsistency ==
    \A w \in Workers :
        (~finished[w] /\ ~podRestarted[w]) =>
            \/ innerPhase[w] = phase
            \/ phase = "Restarting" /\ innerPhase[w] = "RunCommand"


NoFinishDoubleProcessed == \A w \in Workers : finishCount[w] <= 1

MasterSeqNumMonotonic == prevMasterSeq <= masterSeq

WorkerSeqNumBound == /\ \A w \in Workers : agentSeq[w] <= masterSeq
                     /\ \A m \in msgs : m.seq <= masterSeq


StaleFinishRejected == \A w \in Workers : finished[w] => lastFinishSeq[w] = masterSeq



EvictOnlySlow == \A w \in Workers : evict[w] => slow[w]


EvictAtCheckpoint == \A w \in Workers : (evict[w] /\ agentState[w] = "Exited") => checkpointed


EvictionAffordable == phase = "RunCommand" => recoverCount + Cardinality(Evicting) <= MaxRetry








FailedOnlyWhenExhaustedOrQuit ==
    phase = "Failed" => (shouldQuit \/ \E w \in Workers : retries[w] > MaxRetry)



NoRunAfterRetriesExhausted ==
    (countedFailures > MaxRetry \/ \E w \in Workers : retries[w] > MaxRetry)
        => phase \notin {"BootChecking", "RunCommand", "Succeed"}



RecoverCountCountsFailures ==
    \/ recoverCount = IF countedFailures < MaxRetry THEN countedFailures ELSE MaxRetry
    \/ phase = "Failed" /\ recoverCount = MaxRetry + 1




FinishedOnlyWhenDone ==
    \A w \in Workers : (finished[w] /\ ~podRestarted[w]) => agentSeq[w] = masterSeq



SafePointOnlyForAnEviction ==
    (phase = "RunCommand" /\ checkpointed) => \E w \in Workers : evict[w]



EvictionChargedInRun ==
    \A w \in Workers : (evict[w] /\ agentState[w] = "Exited") => phase = "RunCommand"




CountedFailure ==
    /\ phase = "RunCommand"
    /\ phase' \in {"Restarting", "Troubleshooting"}
    /\ countedFailures' = countedFailures + 1
    /\ \E w \in Workers : retries' = [retries EXCEPT ![w] = @ + 1]
    /\ recoverCount' = IF recoverCount < MaxRetry THEN recoverCount + 1 ELSE MaxRetry


RetriesAligned ==
    /\ phase \in {"BootChecking", "RunCommand"}
    /\ retries' = [w \in Workers |-> recoverCount]
    /\ UNCHANGED <<recoverCount, countedFailures>>


FailureWrappedUp ==
    /\ phase = "Failed"
    /\ recoverCount' = MaxRetry + 1
    /\ UNCHANGED <<retries, countedFailures>>



RetriesMoveOnlyByCountedFailures ==
    [][CountedFailure \/ RetriesAligned \/ FailureWrappedUp]_<<retries, recoverCount, countedFailures>>



FailureInRunCostsOneRetry ==
    [][(phase = "RunCommand" /\ phase' \in {"Restarting", "Troubleshooting"}) => CountedFailure]_phase


EvictionCostsOneRetry ==
    [][\A w \in Workers :
          (evict[w] /\ agentState[w] = "Exited" /\ ~evict'[w])
              => /\ retries'[w] = retries[w] + 1
                 /\ countedFailures' = countedFailures + 1]_evict



EvictionOnlyAtSafePoint ==
    [][\A w \in Workers :
          (evict[w] /\ ~podRestarted[w] /\ innerPhase[w] # "Restarting"
              /\ innerPhase'[w] = "Restarting")
              => checkpointed /\ agentState[w] = "Exited"]_innerPhase


QuitNeverEndsSucceed == [][(shouldQuit \/ shouldQuit') => phase' # "Succeed"]_phase





ReplacedIncarnationIgnored ==
    [][/\ \A w \in Workers :
            /\ (~finished[w] /\ finished'[w] /\ agentState'[w] = agentState[w])
                  => \E m \in msgs \ msgs' :
                        m.type = "Finish" /\ m.from = w /\ ~m.replaced
            /\ (~slow[w] /\ slow'[w])
                  => \E m \in msgs \ msgs' : m.type = "Hang" /\ m.from = w /\ ~m.replaced
       /\ (~checkpointed /\ checkpointed')
             => \E m \in msgs \ msgs' : m.type = "Checkpoint" /\ ~m.replaced
       /\ (phase = "RunCommand" /\ phase' = "Troubleshooting")
             => \E m \in msgs \ msgs' : m.type = "Error" /\ ~m.replaced
      ]_<<finished, slow, checkpointed, phase>>


QuitIsNeverCleared == [][shouldQuit => shouldQuit']_shouldQuit


TerminalPhasesAreFinal == [][(phase \in {"Succeed", "Failed"}) => phase' = phase]_phase



CommandAfterChecks ==
    [][(phase # "RunCommand" /\ phase' = "RunCommand")
          => /\ phase \in {"BootChecking", "Troubleshooting"}
             /\ \A w \in Workers : finished[w]]_phase


SucceedOnlyWhenAllFinished ==
    [][phase' = "Succeed" => phase = "RunCommand" /\ \A w \in Workers : finished[w]]_phase



StaleErrorIgnored ==
    [][(phase = "RunCommand" /\ phase' = "Troubleshooting")
          => \E m \in msgs \ msgs' :
                /\ m.type = "Error" /\ m.seq = masterSeq
                /\ retries'[m.from] = retries[m.from] + 1]_phase


StaleHangIgnored ==
    [][\A w \in Workers :
          (~slow[w] /\ slow'[w])
              => \E m \in msgs \ msgs' :
                    m.type = "Hang" /\ m.from = w /\ m.seq = masterSeq]_slow




CheckpointAfterDecision ==
    [][\A m \in msgs' \ msgs :
          (m.type = "Checkpoint" /\ ~m.replaced) => \E w \in Workers : evict[w]]_msgs


StaleCheckpointIgnored ==
    [][(~checkpointed /\ checkpointed')
          => \E m \in msgs \ msgs' : m.type = "Checkpoint" /\ m.seq = masterSeq]_checkpointed





SeqBound == masterSeq <= InitSeqNum + MaxSeqGap






Termination == <>Terminated


vars == << phase, shouldQuit, recoverCount, innerPhase, finished, retries, 
           podRestarted, masterSeq, lastFinishSeq, msgs, agentSeq, agentState, 
           slow, evict, checkpointed, faults, prevMasterSeq, finishCount, 
           countedFailures >>

ProcSet == {"advance"} \cup {"restartInRun"} \cup {"restartOutsideRun"} \cup {"restartDone"} \cup {"retriesExhausted"} \cup {"failedWrapUp"} \cup {"alignRetries"} \cup {"quitRequested"} \cup {"receive"} \cup {"hangWithQuit"} \cup {"evictSlow"} \cup {"agentJoin"} \cup {"agentWork"} \cup {"agentHang"} \cup {"agentCheckpoint"} \cup {"agentEvict"} \cup {"envPodRestart"} \cup {"envDuplicate"} \cup {"envQuit"} \cup {"reschedule"} \cup {"jobDone"}

Init == (* Global variables *)
        /\ phase = "Pending"
        /\ shouldQuit = FALSE
        /\ recoverCount = 0
        /\ innerPhase = [w \in Workers |-> "Pending"]
        /\ finished = [w \in Workers |-> FALSE]
        /\ retries = [w \in Workers |-> 0]
        /\ podRestarted = [w \in Workers |-> FALSE]
        /\ masterSeq = InitSeqNum
        /\ lastFinishSeq = [w \in Workers |-> InitSeqNum - 1]
        /\ msgs = {}
        /\ agentSeq = [w \in Workers |-> InitSeqNum]
        /\ agentState = [w \in Workers |-> "Fresh"]
        /\ slow = [w \in Workers |-> FALSE]
        /\ evict = [w \in Workers |-> FALSE]
        /\ checkpointed = FALSE
        /\ faults = FaultBudget
        /\ prevMasterSeq = InitSeqNum
        /\ finishCount = [w \in Workers |-> 0]
        /\ countedFailures = 0

advance == /\ CanAdvance
           /\ LET next == NextPhase(phase) IN
                /\ phase' = next
                /\ innerPhase' = [w \in Workers |-> next]
                /\ IF next \in OrderPhases
                      THEN /\ prevMasterSeq' = masterSeq
                           /\ masterSeq' = masterSeq + 1
                           /\ slow' = [w \in Workers |-> FALSE]
                           /\ evict' = [w \in Workers |-> FALSE]
                           /\ checkpointed' = FALSE
                           /\ finished' = [w \in Workers |-> FALSE]
                           /\ finishCount' = [w \in Workers |-> 0]
                      ELSE /\ TRUE
                           /\ UNCHANGED << finished, masterSeq, slow, evict, 
                                           checkpointed, prevMasterSeq, 
                                           finishCount >>
           /\ UNCHANGED << shouldQuit, recoverCount, retries, podRestarted, 
                           lastFinishSeq, msgs, agentSeq, agentState, faults, 
                           countedFailures >>

restartInRun == /\ CanRestartInRun
                /\ \E w \in UnseenRestarts:
                     /\ phase' = "Restarting"
                     /\ innerPhase' = [innerPhase EXCEPT ![w] = "Restarting"]
                     /\ finished' = [finished EXCEPT ![w] = FALSE]
                     /\ finishCount' = [finishCount EXCEPT ![w] = 0]
                     /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = InitSeqNum - 1]
                     /\ msgs' = {m \in msgs : m.from # w}
                     /\ slow' = [slow EXCEPT ![w] = FALSE]
                     /\ evict' = [evict EXCEPT ![w] = FALSE]
                     /\ retries' = [retries EXCEPT ![w] = retries[w] + 1]
                     /\ recoverCount' = Min(recoverCount + 1, MaxRetry)
                     /\ countedFailures' = countedFailures + 1
                /\ UNCHANGED << shouldQuit, podRestarted, masterSeq, agentSeq, 
                                agentState, checkpointed, faults, 
                                prevMasterSeq >>

restartOutsideRun == /\ CanRestartOutsideRun
                     /\ \E w \in UnseenRestarts:
                          /\ innerPhase' = [innerPhase EXCEPT ![w] = "Restarting"]
                          /\ finished' = [finished EXCEPT ![w] = FALSE]
                          /\ finishCount' = [finishCount EXCEPT ![w] = 0]
                          /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = InitSeqNum - 1]
                          /\ msgs' = {m \in msgs : m.from # w}
                          /\ slow' = [slow EXCEPT ![w] = FALSE]
                          /\ evict' = [evict EXCEPT ![w] = FALSE]
                     /\ UNCHANGED << phase, shouldQuit, recoverCount, retries, 
                                     podRestarted, masterSeq, agentSeq, 
                                     agentState, checkpointed, faults, 
                                     prevMasterSeq, countedFailures >>

restartDone == /\ CanRestartDone
               /\ phase' = "Troubleshooting"
               /\ innerPhase' = [w \in Workers |-> "Troubleshooting"]
               /\ finished' = [w \in Workers |-> FALSE]
               /\ finishCount' = [w \in Workers |-> 0]
               /\ prevMasterSeq' = masterSeq
               /\ masterSeq' = masterSeq + 1
               /\ slow' = [w \in Workers |-> FALSE]
               /\ evict' = [w \in Workers |-> FALSE]
               /\ checkpointed' = FALSE
               /\ UNCHANGED << shouldQuit, recoverCount, retries, podRestarted, 
                               lastFinishSeq, msgs, agentSeq, agentState, 
                               faults, countedFailures >>

retriesExhausted == /\ CanFailExhausted
                    /\ phase' = "Failed"
                    /\ innerPhase' = [w \in Workers |-> "Failed"]
                    /\ UNCHANGED << shouldQuit, recoverCount, finished, 
                                    retries, podRestarted, masterSeq, 
                                    lastFinishSeq, msgs, agentSeq, agentState, 
                                    slow, evict, checkpointed, faults, 
                                    prevMasterSeq, finishCount, 
                                    countedFailures >>

failedWrapUp == /\ CanWrapUp
                /\ recoverCount' = MaxRetry + 1
                /\ shouldQuit' = TRUE
                /\ UNCHANGED << phase, innerPhase, finished, retries, 
                                podRestarted, masterSeq, lastFinishSeq, msgs, 
                                agentSeq, agentState, slow, evict, 
                                checkpointed, faults, prevMasterSeq, 
                                finishCount, countedFailures >>

alignRetries == /\ CanAlign
                /\ retries' = [w \in Workers |-> recoverCount]
                /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase, 
                                finished, podRestarted, masterSeq, 
                                lastFinishSeq, msgs, agentSeq, agentState, 
                                slow, evict, checkpointed, faults, 
                                prevMasterSeq, finishCount, countedFailures >>

quitRequested == /\ CanQuit
                 /\ phase' = "Failed"
                 /\ innerPhase' = [w \in Workers |-> "Failed"]
                 /\ UNCHANGED << shouldQuit, recoverCount, finished, retries, 
                                 podRestarted, masterSeq, lastFinishSeq, msgs, 
                                 agentSeq, agentState, slow, evict, 
                                 checkpointed, faults, prevMasterSeq, 
                                 finishCount, countedFailures >>

receive == /\ Quiescent
           /\ \E m \in msgs:
                /\ msgs' = msgs \ {m}
                /\ IF m.type = "Finish"
                      THEN /\ IF phase \in OrderPhases /\ ~podRestarted[m.from] /\ FreshFinish(m)
                                 THEN /\ finished' = [finished EXCEPT ![m.from] = TRUE]
                                      /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![m.from] = m.seq]
                                      /\ finishCount' = [finishCount EXCEPT ![m.from] = finishCount[m.from] + 1]
                                 ELSE /\ TRUE
                                      /\ UNCHANGED << finished, lastFinishSeq, 
                                                      finishCount >>
                           /\ UNCHANGED << phase, recoverCount, innerPhase, 
                                           retries, masterSeq, slow, evict, 
                                           checkpointed, prevMasterSeq, 
                                           countedFailures >>
                      ELSE /\ IF m.type = "Hang"
                                 THEN /\ IF phase = "RunCommand" /\ m.seq = masterSeq /\ ~podRestarted[m.from]
                                            THEN /\ slow' = [slow EXCEPT ![m.from] = TRUE]
                                            ELSE /\ TRUE
                                                 /\ slow' = slow
                                      /\ UNCHANGED << phase, recoverCount, 
                                                      innerPhase, finished, 
                                                      retries, masterSeq, 
                                                      evict, checkpointed, 
                                                      prevMasterSeq, 
                                                      finishCount, 
                                                      countedFailures >>
                                 ELSE /\ IF m.type = "Checkpoint"
                                            THEN /\ IF phase = "RunCommand" /\ m.seq = masterSeq /\ Evicting # {}
                                                       THEN /\ checkpointed' = TRUE
                                                       ELSE /\ TRUE
                                                            /\ UNCHANGED checkpointed
                                                 /\ UNCHANGED << phase, 
                                                                 recoverCount, 
                                                                 innerPhase, 
                                                                 finished, 
                                                                 retries, 
                                                                 masterSeq, 
                                                                 slow, evict, 
                                                                 prevMasterSeq, 
                                                                 finishCount, 
                                                                 countedFailures >>
                                            ELSE /\ IF phase = "RunCommand" /\ m.seq = masterSeq /\ ~podRestarted[m.from]
                                                       THEN /\ retries' = [retries EXCEPT ![(m.from)] = retries[(m.from)] + 1]
                                                            /\ recoverCount' = Min(recoverCount + 1, MaxRetry)
                                                            /\ countedFailures' = countedFailures + 1
                                                            /\ phase' = "Troubleshooting"
                                                            /\ innerPhase' = [w \in Workers |-> "Troubleshooting"]
                                                            /\ finished' = [w \in Workers |-> FALSE]
                                                            /\ finishCount' = [w \in Workers |-> 0]
                                                            /\ prevMasterSeq' = masterSeq
                                                            /\ masterSeq' = masterSeq + 1
                                                            /\ slow' = [w \in Workers |-> FALSE]
                                                            /\ evict' = [w \in Workers |-> FALSE]
                                                            /\ checkpointed' = FALSE
                                                       ELSE /\ TRUE
                                                            /\ UNCHANGED << phase, 
                                                                            recoverCount, 
                                                                            innerPhase, 
                                                                            finished, 
                                                                            retries, 
                                                                            masterSeq, 
                                                                            slow, 
                                                                            evict, 
                                                                            checkpointed, 
                                                                            prevMasterSeq, 
                                                                            finishCount, 
                                                                            countedFailures >>
                           /\ UNCHANGED lastFinishSeq
           /\ UNCHANGED << shouldQuit, podRestarted, agentSeq, agentState, 
                           faults >>

hangWithQuit == /\ CanHangWithQuit
                /\ \E w \in SlowToEvict:
                     evict' = [evict EXCEPT ![w] = TRUE]
                /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase, 
                                finished, retries, podRestarted, masterSeq, 
                                lastFinishSeq, msgs, agentSeq, agentState, 
                                slow, checkpointed, faults, prevMasterSeq, 
                                finishCount, countedFailures >>

evictSlow == /\ CanEvictSlow
             /\ \E w \in Evicted:
                  /\ phase' = "Restarting"
                  /\ innerPhase' = [innerPhase EXCEPT ![w] = "Restarting"]
                  /\ finished' = [finished EXCEPT ![w] = FALSE]
                  /\ finishCount' = [finishCount EXCEPT ![w] = 0]
                  /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = InitSeqNum - 1]
                  /\ msgs' = {m \in msgs : m.from # w}
                  /\ slow' = [slow EXCEPT ![w] = FALSE]
                  /\ evict' = [evict EXCEPT ![w] = FALSE]
                  /\ retries' = [retries EXCEPT ![w] = retries[w] + 1]
                  /\ recoverCount' = Min(recoverCount + 1, MaxRetry)
                  /\ countedFailures' = countedFailures + 1
             /\ UNCHANGED << shouldQuit, podRestarted, masterSeq, agentSeq, 
                             agentState, checkpointed, faults, prevMasterSeq >>

agentJoin == /\ Quiescent /\ ~Terminated
             /\ \E w \in {x \in Workers : agentState[x] = "Fresh"
                                           /\ (podRestarted[x] => innerPhase[x] = "Restarting")}:
                  LET ack == [from |-> w, type |-> "ACK", seq |-> agentSeq[w]] IN
                    /\ agentState' = [agentState EXCEPT ![w] = "Ready"]
                    /\ IF podRestarted[w]
                          THEN /\ podRestarted' = [podRestarted EXCEPT ![w] = FALSE]
                               /\ innerPhase' = [innerPhase EXCEPT ![w] = phase]
                          ELSE /\ TRUE
                               /\ UNCHANGED << innerPhase, podRestarted >>
                    /\ IF phase = "Pending" /\ FreshFinish(ack)
                          THEN /\ finished' = [finished EXCEPT ![w] = TRUE]
                               /\ lastFinishSeq' = [lastFinishSeq EXCEPT ![w] = ack.seq]
                               /\ finishCount' = [finishCount EXCEPT ![w] = finishCount[w] + 1]
                          ELSE /\ TRUE
                               /\ UNCHANGED << finished, lastFinishSeq, 
                                               finishCount >>
             /\ UNCHANGED << phase, shouldQuit, recoverCount, retries, 
                             masterSeq, msgs, agentSeq, slow, evict, 
                             checkpointed, faults, prevMasterSeq, 
                             countedFailures >>

agentWork == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < masterSeq}:
                  \E outcome \in Outcomes:
                    /\ Quiescent /\ phase \in OrderPhases
                    /\ agentSeq' = [agentSeq EXCEPT ![w] = masterSeq]
                    /\ msgs' = (msgs \cup {[from |-> w, type |-> outcome, seq |-> masterSeq, replaced |-> FALSE]})
                    /\ IF outcome = "Error"
                          THEN /\ faults' = faults - 1
                               /\ IF phase # "RunCommand"
                                     THEN /\ agentState' = [agentState EXCEPT ![w] = "Exited"]
                                     ELSE /\ TRUE
                                          /\ UNCHANGED agentState
                          ELSE /\ TRUE
                               /\ UNCHANGED << agentState, faults >>
             /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase, 
                             finished, retries, podRestarted, masterSeq, 
                             lastFinishSeq, slow, evict, checkpointed, 
                             prevMasterSeq, finishCount, countedFailures >>

agentHang == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < masterSeq}:
                  /\ Quiescent /\ phase = "RunCommand" /\ faults > 0 /\ ~slow[w]
                  /\ faults' = faults - 1
                  /\ msgs' = (msgs \cup {[from |-> w, type |-> "Hang", seq |-> masterSeq, replaced |-> FALSE]})
             /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase, 
                             finished, retries, podRestarted, masterSeq, 
                             lastFinishSeq, agentSeq, agentState, slow, evict, 
                             checkpointed, prevMasterSeq, finishCount, 
                             countedFailures >>

agentCheckpoint == /\ \E w \in {x \in Workers : agentState[x] = "Ready" /\ agentSeq[x] < masterSeq}:
                        /\ Quiescent /\ phase = "RunCommand" /\ ~checkpointed /\ Evicting # {}
                        /\ msgs' = (msgs \cup {[from |-> w, type |-> "Checkpoint", seq |-> masterSeq,
                                                 replaced |-> FALSE]})
                   /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase, 
                                   finished, retries, podRestarted, masterSeq, 
                                   lastFinishSeq, agentSeq, agentState, slow, 
                                   evict, checkpointed, faults, prevMasterSeq, 
                                   finishCount, countedFailures >>

agentEvict == /\ \E w \in {x \in Workers : evict[x] /\ agentState[x] = "Ready"
                                            /\ agentSeq[x] < masterSeq}:
                   /\ Quiescent /\ phase = "RunCommand" /\ checkpointed
                   /\ agentSeq' = [agentSeq EXCEPT ![w] = masterSeq]
                   /\ agentState' = [agentState EXCEPT ![w] = "Exited"]
              /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase, 
                              finished, retries, podRestarted, masterSeq, 
                              lastFinishSeq, msgs, slow, evict, checkpointed, 
                              faults, prevMasterSeq, finishCount, 
                              countedFailures >>

envPodRestart == /\ \E w \in Workers:
                      /\ Quiescent /\ faults > 0 /\ ~Terminated
                      /\ faults' = faults - 1
                      /\ podRestarted' = [podRestarted EXCEPT ![w] = TRUE]
                      /\ agentState' = [agentState EXCEPT ![w] = "Fresh"]
                      /\ agentSeq' = [agentSeq EXCEPT ![w] = InitSeqNum]
                      /\ msgs' = {IF m.from = w THEN [m EXCEPT !.replaced = TRUE] ELSE m : m \in msgs}
                 /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase, 
                                 finished, retries, masterSeq, lastFinishSeq, 
                                 slow, evict, checkpointed, prevMasterSeq, 
                                 finishCount, countedFailures >>

envDuplicate == /\ \E w \in {x \in Workers : lastFinishSeq[x] >= InitSeqNum}:
                     /\ Quiescent /\ faults > 0 /\ ~Terminated
                     /\ faults' = faults - 1
                     /\ msgs' = (msgs \cup {[from |-> w, type |-> "Finish", seq |-> lastFinishSeq[w],
                                              replaced |-> podRestarted[w]]})
                /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase, 
                                finished, retries, podRestarted, masterSeq, 
                                lastFinishSeq, agentSeq, agentState, slow, 
                                evict, checkpointed, prevMasterSeq, 
                                finishCount, countedFailures >>

envQuit == /\ Quiescent /\ faults > 0 /\ ~shouldQuit /\ ~Terminated
           /\ faults' = faults - 1
           /\ shouldQuit' = TRUE
           /\ UNCHANGED << phase, recoverCount, innerPhase, finished, retries, 
                           podRestarted, masterSeq, lastFinishSeq, msgs, 
                           agentSeq, agentState, slow, evict, checkpointed, 
                           prevMasterSeq, finishCount, countedFailures >>

reschedule == /\ Quiescent /\ ~Terminated
              /\ \E w \in {x \in Workers : agentState[x] = "Exited"}:
                   /\ podRestarted' = [podRestarted EXCEPT ![w] = TRUE]
                   /\ agentState' = [agentState EXCEPT ![w] = "Fresh"]
                   /\ agentSeq' = [agentSeq EXCEPT ![w] = InitSeqNum]
                   /\ msgs' = {IF m.from = w THEN [m EXCEPT !.replaced = TRUE] ELSE m : m \in msgs}
              /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase, 
                              finished, retries, masterSeq, lastFinishSeq, 
                              slow, evict, checkpointed, faults, prevMasterSeq, 
                              finishCount, countedFailures >>

jobDone == /\ Terminated
           /\ UNCHANGED << phase, shouldQuit, recoverCount, innerPhase, 
                           finished, retries, podRestarted, masterSeq, 
                           lastFinishSeq, msgs, agentSeq, agentState, slow, 
                           evict, checkpointed, faults, prevMasterSeq, 
                           finishCount, countedFailures >>

Next == advance \/ restartInRun \/ restartOutsideRun \/ restartDone
           \/ retriesExhausted \/ failedWrapUp \/ alignRetries \/ quitRequested
           \/ receive \/ hangWithQuit \/ evictSlow \/ agentJoin \/ agentWork
           \/ agentHang \/ agentCheckpoint \/ agentEvict \/ envPodRestart
           \/ envDuplicate \/ envQuit \/ reschedule \/ jobDone

Spec == /\ Init /\ [][Next]_vars
        /\ WF_vars(advance)
        /\ WF_vars(restartInRun)
        /\ WF_vars(restartOutsideRun)
        /\ WF_vars(restartDone)
        /\ WF_vars(retriesExhausted)
        /\ WF_vars(failedWrapUp)
        /\ WF_vars(alignRetries)
        /\ WF_vars(quitRequested)
        /\ WF_vars(receive)
        /\ WF_vars(hangWithQuit)
        /\ WF_vars(evictSlow)
        /\ WF_vars(agentJoin)
        /\ WF_vars(agentWork)
        /\ WF_vars(agentEvict)
        /\ WF_vars(reschedule)
        /\ WF_vars(jobDone)

\* END TRANSLATION - the hash of the generated TLA code (remove to silence divergence warnings): TLA-42deb79d07da6cd61ffd54565822acc9
=============================================================================
