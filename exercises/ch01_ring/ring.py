"""Chapter 01 — the ring's bookkeeping: which slot block j uses, and which phase parity to wait for.

A ring of `stages` slots carries blocks 0, 1, 2, ... in turn; each slot has a `full` barrier (the
TMA copy of its block landed: the consumers wait on it) and an `empty` barrier (the consumers are
done with it: the producer waits on it before refilling the slot). A wait on an mbarrier names a
phase *parity*, not a phase number (``mbarrier.try_wait.parity``).

Write the four functions below. They are plain arithmetic — no SimPy — but the grader checks them
against the model: the waits the course's own warp-specialized GEMM logs (`sim.simulate`'s event
log), a ring in the model driven by your functions, and mbarriers the model builds for the
purpose. Chapter 01's introduction has the rule for slots and laps; the pitfalls are the first lap
(what has a fresh barrier completed?) and a waiter that is two phases behind.
"""


def slot(j: int, stages: int) -> int:
    """The slot block j (0, 1, 2, ...) lives in."""
    ### BEGIN SOLUTION
    return j % stages
    ### END SOLUTION


def full_parity(j: int, stages: int) -> int:
    """The parity a consumer waits for on ``full[slot(j, stages)]`` before it reads block j."""
    ### BEGIN SOLUTION
    return (j // stages) & 1
    ### END SOLUTION


def empty_parity(j: int, stages: int) -> int:
    """The parity the producer waits for on ``empty[slot(j, stages)]`` before it copies block j
    into the slot (on the first lap nobody has released anything yet)."""
    ### BEGIN SOLUTION
    # A fresh barrier counts as having completed the phase before phase 0: the opposite parity of
    # the lap lets the first lap through at once, and every later lap waits for lap - 1's release.
    return ((j // stages) & 1) ^ 1
    ### END SOLUTION


def passes(completed: int, parity: int) -> bool:
    """Whether ``try_wait.parity(parity)`` succeeds at once on a barrier that has completed
    `completed` phases so far (phases 0 .. completed - 1; phase `completed` is in progress)."""
    ### BEGIN SOLUTION
    return (completed & 1) != parity
    ### END SOLUTION
