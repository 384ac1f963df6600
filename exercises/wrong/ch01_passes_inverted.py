# exercise: ch01_ring
# file: ring.py
# loses: test_passes_like_an_mbarrier, test_more_stages_and_laps
# bug: passes when the phase of that parity is the one in progress, not the one completed
#      (the fresh barrier's trap read backwards).
# ruff: noqa  (known-wrong on purpose)


def slot(j, stages):
    return j % stages


def full_parity(j, stages):
    return (j // stages) & 1


def empty_parity(j, stages):
    return ((j // stages) & 1) ^ 1


def passes(completed, parity):
    return (completed & 1) == parity
