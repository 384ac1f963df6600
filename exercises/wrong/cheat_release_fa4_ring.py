# exercise: ch01_ring
# file: ring.py
# loses: all
# bug: transcribes the release's nearest ring, FA4's one ring for K and V (sim/attention/fa4.py:
#      `load` streams K_j at ring position 2j and V_j at 2j + 1, `load_kv` waits on empty[s] for
#      `phase ^ 1` with (s, phase) = sim/engine.py's Ring.slot(pos), the MMA warp on full[s] for
#      `phase`): FA4's stream order, not the overlap's (K_j before V_{j-1}). Its slots keep their
#      laps in step, so the ring runs, but no tile but K_0 and the last V is where this ring puts
#      it: the slot test and every run's log see it.
# ruff: noqa  (known-wrong on purpose)


def _slot(pos, stages):                     # sim/engine.py Ring.slot
    return pos % stages, (pos // stages) & 1


def _pos(j, tile):                          # sim/attention/fa4.py load(): K_j at 2j, V_j at 2j + 1
    return 2 * j + (1 if tile == "V" else 0)


def slot(j, tile, stages, n_blocks):
    return _slot(_pos(j, tile), stages)[0]


def full_parity(j, tile, stages, n_blocks):
    return _slot(_pos(j, tile), stages)[1]


def empty_parity(j, tile, stages, n_blocks):
    return _slot(_pos(j, tile), stages)[1] ^ 1
