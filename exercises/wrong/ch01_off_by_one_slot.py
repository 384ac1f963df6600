# exercise: ch01_ring
# file: ring.py
# loses: test_slots_in_stream_order, test_every_depth_and_many_laps
# bug: puts the stream one slot further on (slot 1 first). The ring still runs (every slot keeps its
#      own laps in step with its phases), but the tiles are not where the ring says: the slot test
#      fails, and the hidden test, which reads each tile's slot from the run's log.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 01 — one ring for K and V: which slot a tile uses, and which phase parity to wait for.

The course's `ws` attention gives K and V a ring each. Here they share ONE ring of `stages` slots,
each slot one tile (``block_n × headdim``): the producer streams K_0, V_0, K_1, V_1, K_2, ... into
it, each tile into the next slot, round and round (with an odd number of stages, K_j does not
always land in the same slot). Each slot has a `full` barrier (the TMA copy of its tile landed: the
consumers wait on it before they read the tile) and an `empty` barrier (both consumers are done
with the tile: the producer waits on it before it copies the next tile into the slot). A wait on
an mbarrier names a phase *parity*, not a phase number (``mbarrier.try_wait.parity``).

Write the three functions below (`tile` is ``"K"`` or ``"V"``). They are plain arithmetic — no
SimPy — and the grader runs them in the model: its producer and consumers take every slot and
parity from your functions, and the run's event log shows whether a tile was read before it
landed, refilled before it was released, or waited for past its time. Chapter 01's introduction
has the rule for slots and laps; the pitfalls are the first lap (what has a fresh barrier
completed?) and a ring of one stage, or of fewer slots than a block has tiles.
"""


def slot(j: int, tile: str, stages: int) -> int:
    """The slot tile `tile` ("K" or "V") of block j (0, 1, 2, ...) lives in."""
    return ((2 * j + (tile == "V")) + 1) % stages


def full_parity(j: int, tile: str, stages: int) -> int:
    """The parity a consumer waits for on ``full[slot(j, tile, stages)]`` before it reads the
    tile."""
    return ((2 * j + (tile == "V")) // stages) & 1


def empty_parity(j: int, tile: str, stages: int) -> int:
    """The parity the producer waits for on ``empty[slot(j, tile, stages)]`` before it copies the
    tile into the slot (on the first lap nobody has released anything yet)."""
    return (((2 * j + (tile == "V")) // stages) & 1) ^ 1
