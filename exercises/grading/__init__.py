"""Grading tooling: the pytest plugin (points, report events), the runner (one subprocess per
exercise, restarted past a crash), the release writer and the model harness used by the tests."""
