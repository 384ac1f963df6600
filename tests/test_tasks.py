"""`python3 tasks.py test` runs pytest on a worker a core and one more (pytest-xdist) unless the
user chooses."""
import importlib.util
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("course_tasks_args", ROOT / "tasks.py")
tasks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tasks)


def test_the_suite_runs_on_every_core_and_one_more_by_default():
    n = str((os.cpu_count() or 1) + 1)
    assert tasks.test_args([]) == ["-n", n, "--dist", "loadfile"]
    assert tasks.test_args(["-x", "tests/model"]) == ["-n", n, "--dist", "loadfile", "-x",
                                                      "tests/model"]


def test_the_users_choice_wins():
    for args in (["-n", "4"], ["-n4"], ["--numprocesses=2"], ["-n", "0", "-x"],
                 ["-p", "no:xdist"], ["-pno:xdist"]):
        assert tasks.test_args(args) == args, args
