# exercise: ch01_ring
# file: ring.py
# loses: all
# bug: never works out a tile's place from (j, tile, n_blocks): counts the calls instead (a
#      grader that asks slot, full_parity and empty_parity tile by tile in stream order asks the
#      p-th tile p-th), restarting when asked about K_0. Right in that order and only in it: asked
#      in a shuffled order, or a tile asked twice, the answers are another ring's.
# ruff: noqa  (known-wrong on purpose)

_calls = {}


def _n(j, tile, which):
    if j == 0 and tile == "K":
        _calls[which] = 0
    n = _calls.get(which, 0)
    _calls[which] = n + 1
    return n


def slot(j, tile, stages, n_blocks):
    return _n(j, tile, "slot") % stages


def full_parity(j, tile, stages, n_blocks):
    return (_n(j, tile, "full") // stages) & 1


def empty_parity(j, tile, stages, n_blocks):
    return ((_n(j, tile, "empty") // stages) & 1) ^ 1
