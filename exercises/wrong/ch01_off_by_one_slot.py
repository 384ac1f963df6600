# exercise: ch01_ring
# file: ring.py
# loses: test_slots_match_the_model, test_a_ring_runs_on_your_functions, test_more_stages_and_laps
# bug: block j goes to slot (j + 1) % stages: the model reads block j from slot j % stages,
#      which holds another block.
# ruff: noqa  (known-wrong on purpose)


def slot(j, stages):
    return (j + 1) % stages


def full_parity(j, stages):
    return (j // stages) & 1


def empty_parity(j, stages):
    return ((j // stages) & 1) ^ 1


def passes(completed, parity):
    return (completed & 1) != parity
