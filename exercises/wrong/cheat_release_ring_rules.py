# exercise: ch01_ring
# file: ring.py
# loses: all
# bug: transcribes the release's answer for two rings (kernels/ring.py, sim/engine.py's
#      Ring.slot: block j in slot j % stages, parity (j // stages) & 1) for the one shared ring:
#      K_j and V_j then want the same slot at the same lap.
# ruff: noqa  (known-wrong on purpose)


def slot(j, tile, stages, n_blocks):
    return j % stages


def full_parity(j, tile, stages, n_blocks):
    return (j // stages) & 1


def empty_parity(j, tile, stages, n_blocks):
    return ((j // stages) & 1) ^ 1
