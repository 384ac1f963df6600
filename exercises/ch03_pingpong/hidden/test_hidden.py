"""Hidden tests of chapter 03 (never released): three warpgroups taking turns."""
import random

import pytest

from exercises.grading import harness

pub = harness.public(__file__, "test_pingpong.py")


ROUNDS = random.SystemRandom().randint(3, 6)     # drawn afresh each grading run


@pytest.mark.points(1)
def test_three_warpgroups():
    """Alone: 3 warpgroups take their turns in order 0, 1, 2, 0, 1, 2, ..."""
    log, run = pub._turn_order(pub.sub(), 3, ROUNDS)
    assert run.finished, run.error
    assert [(w, k) for _, w, k in log] == [(w, k) for k in range(ROUNDS) for w in range(3)], log
