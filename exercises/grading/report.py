"""Reports of a grading run: a terminal table, a JSON document, Gradescope's results.json."""
from __future__ import annotations

import json
import re

from .runner import ExerciseResult

# control characters U+0000-U+001F (less newline and tab), DEL, U+0080-U+009F, and the Unicode
# format characters that reorder or hide text on a screen (bidi overrides and isolates,
# zero-width characters)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e"
                     "\u2060-\u2069\ufeff]")
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e"
                          "\u2060-\u2069\ufeff]")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def safe(text, one_line: bool = False) -> str:
    """`text` (anything a submission may have shaped: an exception's message, a traceback, its
    output, a student's file or folder name) made safe to print on a terminal or write to a
    report: every control character but newline and tab (escape sequences, carriage return,
    backspace, U+0080-U+009F) and every character that reorders or hides text is shown as its
    escape (ESC as ``\\x1b``). With `one_line`, newline and tab are escaped too (a table cell,
    a status)."""
    text = text if isinstance(text, str) else str(text)
    return (_UNSAFE_LINE if one_line else _UNSAFE).sub(_escape, text)


def _fmt(x: float) -> str:
    return f"{x:g}"


def summary(results: list[ExerciseResult], released: bool) -> dict:
    tests = [t for r in results for t in r.tests]
    graded = [t for t in tests if t.outcome != "skipped"]
    public = [t for t in graded if not t.hidden]
    hidden = [t for t in graded if t.hidden]
    score = sum(t.score for t in graded)
    max_score = sum(t.points for t in graded)
    pub_ok = all(t.outcome == "passed" for t in public) and not any(r.error for r in results)
    hid_ok = all(t.outcome == "passed" for t in hidden)
    if released:
        verdict = ("public tests passed (the instructor's grading adds hidden tests)" if pub_ok
                   else "some public tests failed")
    elif hidden:
        verdict = ("public and hidden tests passed" if pub_ok and hid_ok else
                   "public tests passed; some hidden tests failed" if pub_ok else
                   "some public tests failed")
    else:
        verdict = "public tests passed" if pub_ok else "some public tests failed"
    left_out = [r.name for r in results if r.not_installed]
    skipped = [t for r in results if not r.not_installed for t in r.tests if t.outcome == "skipped"]
    return {"score": score, "max_score": max_score, "verdict": verdict,
            "public": {"score": sum(t.score for t in public), "max_score": sum(t.points for t in public)},
            "hidden": {"score": sum(t.score for t in hidden), "max_score": sum(t.points for t in hidden)},
            "hidden_tests_removed": released, "skipped": [t.nodeid for t in skipped],
            "not_installed": left_out}


def to_json(results: list[ExerciseResult], released: bool) -> dict:
    return {
        **summary(results, released),
        "exercises": [{
            "name": r.name, "score": r.score, "max_score": r.max_score, "error": safe(r.error),
            "seconds": round(r.seconds, 2), "isolation": r.isolation,
            "limits": [safe(lim, one_line=True) for lim in r.limits],
            "tests": [{"name": t.name, "nodeid": t.nodeid, "points": t.points, "score": t.score,
                       "outcome": t.outcome, "hidden": t.hidden, "gpu": t.gpu,
                       "message": safe(t.message[-2000:])} for t in r.tests],
        } for r in results],
    }


def table(results: list[ExerciseResult], released: bool, verbose: bool = False) -> str:
    rows = []
    w = max([len(t.name) for r in results for t in r.tests] + [20])
    for r in results:
        if r.not_installed:      # said once, below the score
            continue
        err = safe(r.error).strip().splitlines()
        rows.append(f"{r.name}  {_fmt(r.score)}/{_fmt(r.max_score)}"
                    + (f"  ({err[0]})" if err else ""))
        for t in r.tests:
            mark = {"passed": "ok  ", "failed": "FAIL", "skipped": "skip"}[t.outcome]
            tag = " [hidden]" if t.hidden else ""
            pts = f"{_fmt(t.score)}/{_fmt(t.points)}" if t.outcome != "skipped" else f"-/{_fmt(t.points)}"
            rows.append(f"  {mark} {t.name:<{w}} {pts:>7}{tag}")
            if t.outcome == "failed" and t.message:
                lines = [ln for ln in safe(t.message).strip().splitlines() if ln.strip()]
                shown = lines[-(12 if verbose else 3):]
                rows += ["        " + ln[:150] for ln in shown]
            elif t.outcome == "skipped" and verbose:
                rows.append(f"        {safe(t.message[:150], one_line=True)}")
    s = summary(results, released)
    rows.append("")
    rows.append(f"score {_fmt(s['score'])}/{_fmt(s['max_score'])}  (public "
                f"{_fmt(s['public']['score'])}/{_fmt(s['public']['max_score'])}"
                + (f", hidden {_fmt(s['hidden']['score'])}/{_fmt(s['hidden']['max_score'])}"
                   if s["hidden"]["max_score"] else "") + f"): {s['verdict']}")
    if s["skipped"]:
        rows.append(f"{len(s['skipped'])} GPU test(s) skipped (no Hopper GPU here); not counted")
    for iso in sorted({r.isolation for r in results if r.isolation}):
        rows.append(f"isolation: {iso}")
    for r in results:
        rows += [f"limit: {r.name} {safe(lim, one_line=True)}" for lim in r.limits]
    if s["not_installed"]:
        rows.append(f"not graded, left out of the maximum: {', '.join(s['not_installed'])} "
                    "(they need `pip install -r requirements-kernels.txt`: triton, torch)")
    return "\n".join(rows)


def gradescope(results: list[ExerciseResult], released: bool) -> dict:
    """Gradescope's results.json (gradescope-autograders.readthedocs.io/en/latest/specs/).

    One test per graded pytest test, worth its points. Public tests are ``visible``; hidden tests
    are ``after_published`` (shown when the instructor publishes the grades). Gradescope hides a
    student's total score while any test is hidden, so the top-level ``score`` (public and hidden)
    is safe to send; the top-level ``output``, which students see at once, speaks of the public
    tests only: no hidden outcome, count or points. A hidden test's own ``output`` is its
    statement and whether it passed, never its message (`_student_output`: it may hold the values
    drawn for the student and the file).
    ``stdout`` (the full table, hidden tests included) stays with the instructors
    (``stdout_visibility`` ``hidden``).
    """
    tests = []
    for r in results:
        if r.error and not r.tests:
            tests.append({"name": f"{r.name}: grading error", "score": 0, "max_score": 0,
                          "status": "failed", "output": safe(r.error[-4000:]),
                          "visibility": "visible"})
        for t in r.tests:
            if t.outcome == "skipped":
                continue
            tests.append({
                "name": f"{r.name}: {t.name}" + (" (hidden)" if t.hidden else ""),
                "score": t.score, "max_score": t.points,
                "status": "passed" if t.outcome == "passed" else "failed",
                "output": _student_output(t),
                "visibility": "after_published" if t.hidden else "visible",
            })
    return {"score": sum(t["score"] for t in tests), "output": public_output(results, released),
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"isolation": sorted({r.isolation for r in results if r.isolation}),
                           "limits": [f"{r.name} {safe(lim, one_line=True)}" for r in results
                                      for lim in r.limits]}}


HIDDEN_FAILED = ("failed. A hidden test's values and messages stay with the instructor: they are "
                 "drawn for you and for this file.")


def _student_output(t) -> str:
    """What a student reads of one test: its statement, and for a failed public test the
    message; a hidden test's message (which may hold its drawn values) is never shown."""
    if t.outcome != "failed":
        return t.doc.strip()
    return (t.doc + "\n\n" + (HIDDEN_FAILED if t.hidden else safe(t.message[-4000:]))).strip()


def public_output(results: list[ExerciseResult], released: bool) -> str:
    """The student-visible summary of a grading run: the public tests' results alone."""
    public = [t for r in results for t in r.tests if t.outcome != "skipped" and not t.hidden]
    errors = [r.name for r in results if r.error and not r.tests]     # its visible error entry
    passed = sum(t.outcome == "passed" for t in public)
    ok = passed == len(public) and not errors
    score, points = sum(t.score for t in public), sum(t.points for t in public)
    text = (f"Public tests: {_fmt(score)}/{_fmt(points)} points, "
            f"{passed} of {len(public)} tests passed"
            + ("" if ok else "; see the failed tests below")
            + (f" (grading errors in {', '.join(errors)})" if errors else "") + ".")
    if not released and any(t.hidden for r in results for t in r.tests):
        text += (" Hidden tests are graded too; their results, and your total score, appear when"
                 " the grades are published.")
    return text


def dumps(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)
