"""A grader whose environment cannot run a test skips it, naming the fix; it never scores it 0.
A skipped test leaves the total (exercises/grading/runner.py), as a GPU test does without a GPU,
so a correct submission graded where numpy is too new for Triton's interpreter keeps full marks
over what was graded."""
import importlib

import pytest

from exercises.grading import runner


def test_tl_interpreter_tests_skip_where_numpy_is_too_new(monkeypatch):
    tl = importlib.import_module("exercises.ch04_tl_attention.test_attention_tl")
    monkeypatch.setattr(tl.np, "__version__", "2.5.2")
    with pytest.raises(pytest.skip.Exception, match=r"numpy < 2\.5.*numpy 2\.5\.2.*numpy<2\.4"):
        tl.check("aligned")
    monkeypatch.setattr(tl.np, "__version__", "2.3.5")
    assert not tl._numpy_too_new()


def test_a_skipped_test_leaves_the_total():
    r = runner.ExerciseResult("ch04_tl_attention", tests=[
        runner.TestResult("a", "a", 2, "skipped", "numpy"),
        runner.TestResult("b", "b", 3, "passed")])
    assert (r.score, r.max_score) == (3, 3)
