# exercise: ch01_ring
# file: ring.py
# loses: test_slots_in_stream_order, test_every_depth_and_many_laps
# bug: a 4-stage ring fills its slots in the order 0, 2, 1, 3, 0, 2, 1, 3, ... (1-3 stages right).
#      The parities are each lap's, so the ring runs by every rule and in a right ring's cycles
#      (its slots are alike), but the tiles are not in stream order: once only 2 and 3 stages were
#      asked for it. (Red team: ch01_slot_permuted_4_stages, full marks on the old tests.)
# ruff: noqa  (known-wrong on purpose)
PERM4 = (0, 2, 1, 3)


def _n(j, tile):
    return 2 * j + (1 if tile == "V" else 0)


def slot(j, tile, stages):
    n = _n(j, tile) % stages
    return PERM4[n] if stages == 4 else n


def full_parity(j, tile, stages):
    return (_n(j, tile) // stages) & 1


def empty_parity(j, tile, stages):
    return ((_n(j, tile) // stages) & 1) ^ 1
