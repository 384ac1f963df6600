# exercise: ch01_ring
# file: ring.py
# loses: test_slots_in_stream_order, test_every_depth_and_many_laps
# bug: a 4-stage ring run as a 2-stage one (slots 0 and 1 only, laps of two tiles; 1-3 stages
#      right). It breaks no rule of the run, but the tiles are not in stream order, and the ring
#      is 6-16% slower than a 4-stage one over many laps. (Red team: ch01_four_stages_as_two; the
#      old tests asked the stream order for 2 and 3 stages only and ran 4 stages over many laps in
#      about half the draws: full marks in 9 of 25 runs measured.)
# ruff: noqa  (known-wrong on purpose)


def _st(stages):
    return 2 if stages == 4 else stages


def slot(j, tile, stages):
    return (2 * j + (tile == "V")) % _st(stages)


def full_parity(j, tile, stages):
    return ((2 * j + (tile == "V")) // _st(stages)) & 1


def empty_parity(j, tile, stages):
    return full_parity(j, tile, stages) ^ 1
