"""Chapter 01 — one ring for K and V, in the order the consumers read them: which slot a tile
uses, and which phase parity to wait for.

The course's `ws` and `fa3` attention give K and V a ring each. Here they share ONE ring of
`stages` slots, each slot one tile (``block_n × headdim``), and the producer streams the tiles in
the order chapter 04's intra-warpgroup overlap reads them. A consumer issues Q·K_jᵀ and
P_{j-1}·V_{j-1} back to back, so it needs K_j first and V_{j-1} right after: the stream is K_0,
then K_1, V_0, K_2, V_1, ..., K_{n-1}, V_{n-2}, and V_{n-1} closes it (n = ``n_blocks``). Each
tile goes into the next slot, round and round. Each slot has a `full` barrier (the TMA copy of its
tile landed: the consumers wait on it before they read the tile) and an `empty` barrier (both
consumers are done with the tile: the producer waits on it before it copies the next tile into the
slot). A wait on an mbarrier names a phase *parity*, not a phase number
(``mbarrier.try_wait.parity``). A consumer holds K_j and V_{j-1} at once, so the ring has at least
two stages.

Write the functions below (`tile` is ``"K"`` or ``"V"``, `j` the block, 0 <= j < n_blocks;
`position` is a helper for the other three, which are what the grader asks). They are plain
arithmetic — no SimPy — and the grader runs them in the model: its producer and consumers take
every slot and parity from your functions (asked in any order, some more than once), and the
run's event log shows whether a tile was read before it landed, refilled before it was released,
or waited for past its time. Chapter 01's introduction has the rule for slots and laps; the
pitfalls are the two ends of the stream (what comes first, what comes last), the first lap (what
has a fresh barrier completed?) and a ring with fewer slots than the stream has tiles, or more.
"""


def position(j: int, tile: str, n_blocks: int) -> int:
    """Where tile `tile` of block j is in the stream: K_0 is 0, K_1 is 1, V_0 is 2, ..."""
    ### BEGIN SOLUTION
    # K_0 opens the stream; then each K_j goes out just before V_{j-1}, which it is read with, so
    # K_j is at 2j - 1 and V_j at 2j + 2 — but V_{n-1} has no K_n before it and closes the stream.
    if tile == "K":
        return 2 * j - 1 if j > 0 else 0
    return 2 * j + 2 if j < n_blocks - 1 else 2 * n_blocks - 1
    ### END SOLUTION


def slot(j: int, tile: str, stages: int, n_blocks: int) -> int:
    """The slot tile `tile` ("K" or "V") of block j lives in."""
    ### BEGIN SOLUTION
    return position(j, tile, n_blocks) % stages
    ### END SOLUTION


def full_parity(j: int, tile: str, stages: int, n_blocks: int) -> int:
    """The parity a consumer waits for on ``full[slot(...)]`` before it reads the tile."""
    ### BEGIN SOLUTION
    return (position(j, tile, n_blocks) // stages) & 1
    ### END SOLUTION


def empty_parity(j: int, tile: str, stages: int, n_blocks: int) -> int:
    """The parity the producer waits for on ``empty[slot(...)]`` before it copies the tile into
    the slot (on the first lap nobody has released anything yet)."""
    ### BEGIN SOLUTION
    # A fresh barrier counts as having completed the phase before phase 0: the opposite parity of
    # the lap lets the first lap through at once, and every later lap waits for lap - 1's release.
    return full_parity(j, tile, stages, n_blocks) ^ 1
    ### END SOLUTION
