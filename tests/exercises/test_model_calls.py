"""The grader's own process is not in any sandbox: every call a role makes on its CTA, and every
step it yields, runs in the grader's model there. A role that makes millions of them must be
stopped by a count the grader keeps, with the limit named, before the grader grows by gigabytes
and each test runs to its deadline."""
import subprocess
import sys
import time
from pathlib import Path

from exercises.grading import student

ROOT = Path(__file__).resolve().parents[2]
FLOOD = ROOT / "exercises" / "wrong" / "cheat_grader_model_call_flood.py"


# The grading runs under a wrapper process of its own, so the largest process it saw is the
# grading's alone: this test's worker has run other tests' children before.
PEAK = ("import resource, subprocess, sys\n"
        "out = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stdout.write(out.stdout + out.stderr)\n"
        "print('peak_kb', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def test_a_flood_of_model_calls_is_stopped_and_named(tmp_path):
    (tmp_path / "producer.py").write_text(FLOOD.read_text())
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", PEAK, sys.executable, "-m", "exercises", "grade",
                          str(tmp_path), "--only", "ch02_producer", "--test",
                          "test_runs_to_the_end", "--timeout", "100"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    took = time.monotonic() - t0
    text, peak = (out.stdout + out.stderr).rsplit("peak_kb", 1)
    peak_kb = int(peak)
    assert "score 0/1" in text, text[-2000:]
    assert "model-call limit" in text.split("score 0/1")[-1], text[-2000:]   # the status line
    assert took < 60, f"the flood ran {took:.0f} s: stopped by the test's deadline, not a count"
    # the grader's process (and the largest of its children) stays small: uncounted, the flood
    # grows the grader by about 1.7 GB in one test
    assert peak_kb < 700 * 1024, f"a process of the grading grew to {peak_kb} kB"


def test_a_right_role_stays_far_below_the_count():
    """The longest runs the tests make (ch03: 48 blocks, three consumers) take about 2,500 calls
    and steps a session: the limit leaves a right role, even a chatty one, room."""
    assert student.MODEL_CALLS >= 8 * 2500
