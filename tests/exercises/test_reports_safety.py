"""What a submission writes never drives the instructor's terminal or the reports, and never names
a limit: the table, the JSON report, Gradescope's results.json and grade-class's gradebook and
reports show control characters as escapes, and the limits come from the sandbox's measurements."""
from __future__ import annotations

import csv
import re
import shutil

from exercises.grading import grade_class as gc
from exercises.grading import report, runner
from exercises.grading.sandbox import Outcome, SessionEnded

PKG = runner.PACKAGE
WRONG = PKG / "wrong" / "ch05_escapes_and_a_named_limit.py"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_safe_escapes_controls_and_keeps_lines():
    text = "a\x1b[2Jb\rc\x9b2K\x07\nd\te\u202ef\x00"
    out = report.safe(text)
    assert not CONTROL.search(out.replace("\n", "").replace("\t", ""))
    assert "\\x1b[2J" in out and "\\x0d" in out and "\\x9b" in out and "\\u202e" in out
    assert out.count("\n") == 1 and "\t" in out
    assert report.safe(out) == out                      # once is enough
    line = report.safe("a\nb\tc\x1b", one_line=True)
    assert "\n" not in line and "\t" not in line and "\x1b" not in line


def _strings(doc):
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for v in doc.values():
            yield from _strings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _strings(v)


def _grade(tmp_path):
    sub = tmp_path / "sub" / "ch05_idle"
    sub.mkdir(parents=True)
    shutil.copyfile(WRONG, sub / "idle.py")
    return runner.grade(sub.parent, only=["ch05_idle"], jobs=1, test_timeout=60)


def test_escapes_and_a_named_limit_reach_no_report(tmp_path):
    results = _grade(tmp_path)
    [r] = results
    failed = [t for t in r.tests if t.outcome == "failed"]
    assert failed and all("x1b[2J" in t.message for t in failed)
    assert r.limits == [], "a message's text named a limit"
    for t in r.tests:
        assert not CONTROL.search(t.message.replace("\n", "").replace("\t", ""))
    table = report.table(results, False, verbose=True)
    assert "\x1b" not in table and "\r" not in table and "\x9b" not in table
    assert "limit:" not in table
    assert "score 2/7" in table
    for doc in (report.to_json(results, False), report.gradescope(results, False)):
        for text in _strings(doc):
            assert not CONTROL.search(text.replace("\n", "").replace("\t", "")), text
    assert report.gradescope(results, False)["extra_data"]["limits"] == []


def test_limits_come_from_the_sandbox_outcome():
    """A session that ended with a limit the sandbox measured is named; the text of the error or
    the output never names one."""
    from exercises.grading.student import Student
    st = Student({}, ())
    st.deadline = None
    text = Outcome(error="MemoryError\nstopped by the memory limit",
                   output="No space left on device MemoryError", returncode=1)
    assert runner.structured_limit(text) == ""
    assert runner._limit_of(SessionEnded("gone", text), st) == ""
    assert runner._limit_of(AssertionError("x\nstopped by the memory limit (1 bytes)"), st) == ""
    oom = Outcome(oom_killed=True, returncode=-9, limits={"memory_bytes": 1 << 20})
    assert "memory limit" in runner.structured_limit(oom)
    try:
        try:
            raise SessionEnded("gone", oom)
        except SessionEnded as e:
            raise AssertionError(f"the submission's process failed: {e}") from None
    except AssertionError as e:
        assert "OOM killer" in runner._limit_of(e, st)
    assert "CPU-time" in runner.structured_limit(Outcome(returncode=-24))
    assert "wall-clock" in runner.structured_limit(Outcome(timed_out=True))


def test_gradebook_and_reports_are_free_of_control_characters(tmp_path):
    sub = tmp_path / "class" / "eve\x1b[2Jx" / "exercises" / "ch05_idle"
    sub.mkdir(parents=True)
    shutil.copyfile(WRONG, sub / "idle.py")
    out = tmp_path / "out"
    res = gc.grade_class(tmp_path / "class", out, jobs=1, only=["ch05_idle"], quiet=True)
    [row] = res["rows"]
    assert row["ch05_idle"] == 2 and row["status"] == "ok", row
    for f in [out / "gradebook.csv", *sorted((out / "reports").iterdir())]:
        text = f.read_text()
        assert not CONTROL.search(text.replace("\r\n", "").replace("\n", "")), f
        assert "\\u001b" not in text, f
    with open(out / "gradebook.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[1][0] == "eve\\x1b[2Jx" and rows[1][-1] == "ok"
    assert "\x1b" not in gc.summary_table(res)
