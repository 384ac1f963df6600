"""The CPU a submission's session uses, counted by the grader (`sandbox.Session.cpu_s`,
`Student.timed_calls`): the worker's own time, and the time of what it started (a process forked
at import, before the guard, that does the work; a thread that ends; a helper the sandbox's reaper
reaped; a helper whose parent would leave its reaping to the kernel, which adds its time to no
one's count, and so may not), never what the submission reports; a budget past which the
session is stopped, the limit named."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from exercises.grading import runner
from exercises.grading.student import CPUBudget, Student

PKG = runner.PACKAGE
SPIN = """
import os, threading, time

def spin(s):
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass
"""


def student(tmp_path, source) -> Student:
    f = tmp_path / "busy.py"
    f.write_text(textwrap.dedent(SPIN) + textwrap.dedent(source))
    return Student({"busy.py": f}, timeout_s=60)


# each counted call makes 0.1 s of CPU somewhere below the worker
WAYS = {
    "in the call": """
        def work():
            spin(0.1)
            return 1.0
        """,
    "in a thread that ends": """
        def work():
            th = threading.Thread(target=spin, args=(0.1,))
            th.start()
            th.join()
            return 1.0
        """,
    "in a helper forked at import": """
        _ask, _go = os.pipe()
        _done, _tell = os.pipe()
        if os.fork() == 0:                      # before the guard: the helper does the work
            while os.read(_ask, 1):
                spin(0.1)
                os.write(_tell, b"x")
            os._exit(0)

        def work():
            os.write(_go, b"x")
            os.read(_done, 1)
            return 1.0
        """,
    "in helpers orphaned at import, each ending after its call": """
        _pipes = []
        for _ in range(5):                      # the first call, and four counted
            ask, go = os.pipe()
            done, tell = os.pipe()
            if os.fork() == 0:
                if os.fork() == 0:              # the sandbox's reaper adopts it, and reaps it
                    os.read(ask, 1)
                    spin(0.1)
                    os.write(tell, b"x")
                os._exit(0)
            _pipes.append((go, done))

        def work():
            go, done = _pipes.pop()
            os.write(go, b"x")
            os.read(done, 1)
            return 1.0
        """,
    "in helpers the kernel reaps itself (SIGCHLD ignored, a subreaper), gone before each answer": """
        import ctypes, signal
        try:                                    # refused: the worker waits for them, counted
            signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        except OSError:
            pass
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)     # PR_SET_CHILD_SUBREAPER: orphans come here
        _ask, _go = os.pipe()
        _done, _tell = os.pipe()
        if os.fork() == 0:
            while os.read(_ask, 1):
                if os.fork() == 0:              # the successor waits for the next call
                    continue
                spin(0.1)                       # this helper works, answers and exits
                os.write(_tell, str(os.getpid()).encode().rjust(16))
                os._exit(0)
            os._exit(0)

        def work():
            os.write(_go, b"x")
            pid = int(os.read(_done, 16))
            try:
                os.waitpid(pid, 0)              # ours to reap; or gone, reaped by the kernel
            except ChildProcessError:
                pass
            return 1.0
        """,
}


@pytest.mark.parametrize("way", list(WAYS))
def test_the_work_is_counted_wherever_it_runs(tmp_path, way):
    st = student(tmp_path, WAYS[way])
    try:
        values, used = st.timed_calls("busy:work", [()] * 4)
    finally:
        st.close()
    assert values == [1.0] * 4
    assert 0.29 <= used < 0.8, used          # the first call (the import's) is not counted


def test_a_formula_costs_next_to_nothing(tmp_path):
    st = student(tmp_path, """
        def work(x):
            return x / 3
        """)
    try:
        values, used = st.timed_calls("busy:work", [(float(i),) for i in range(200)])
    finally:
        st.close()
    assert values[3] == 1.0 and 0 <= used < 0.1, used


def test_past_the_budget_the_session_is_stopped_and_the_limit_named(tmp_path):
    st = student(tmp_path, WAYS["in the call"])
    try:
        with pytest.raises(CPUBudget) as e:
            st.timed_calls("busy:work", [()] * 200, budget_s=0.25, what="a test's")
    finally:
        st.close()
    assert "stopped by the CPU-time budget (0.250 s" in str(e.value)
    assert st.grader_limit.startswith("CPU-time budget") and "a test's" in st.grader_limit
    assert "after 50 of 200 calls" in str(e.value)         # stopped at the first reading past it


def test_the_model_carried_at_import_loses_the_formula_speed_test(tmp_path):
    """A copy of the course's model loaded at import answers every prediction right, and at the
    model's cost: the formula-speed test stops it, and the status names the budget."""
    sub = tmp_path / "ch05_idle"
    sub.mkdir()
    shutil.copyfile(PKG / "wrong" / "cheat_model_carried_at_import.py", sub / "idle.py")
    [res] = runner.grade(tmp_path, only=["ch05_idle"], jobs=1,
                         test="test_predict_at_a_formulas_speed")
    [t] = res.tests
    assert t.outcome == "failed" and "stopped by the CPU-time budget" in t.message, t.message
    assert any("test_predict_at_a_formulas_speed: CPU-time budget" in x for x in res.limits), \
        res.limits
