# exercise: ch01_ring
# file: ring.py
# loses: test_parities_match_the_model, test_a_ring_runs_on_your_functions, test_more_stages_and_laps
# bug: the producer waits on empty with the lap's own parity: on a fresh barrier that phase
#      has not completed, so the first lap waits for a release that never comes (deadlock).
# ruff: noqa  (known-wrong on purpose)


def slot(j, stages):
    return j % stages


def full_parity(j, stages):
    return (j // stages) & 1


def empty_parity(j, stages):
    return (j // stages) & 1


def passes(completed, parity):
    return (completed & 1) != parity
