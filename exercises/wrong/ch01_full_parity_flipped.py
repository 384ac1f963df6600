# exercise: ch01_ring
# file: ring.py
# loses: test_parities_match_the_model, test_a_ring_runs_on_your_functions, test_more_stages_and_laps
# bug: the consumers wait on full with the producer's parity: on the first lap that phase counts
#      as done on a fresh barrier, so they read slots whose blocks are still in flight.
# ruff: noqa  (known-wrong on purpose)


def slot(j, stages):
    return j % stages


def full_parity(j, stages):
    return ((j // stages) & 1) ^ 1


def empty_parity(j, stages):
    return ((j // stages) & 1) ^ 1


def passes(completed, parity):
    return (completed & 1) != parity
