"""Reports of a grading run: a terminal table, a JSON document, Gradescope's results.json."""
from __future__ import annotations

import json

from .runner import ExerciseResult


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
    skipped = [t for t in tests if t.outcome == "skipped"]
    return {"score": score, "max_score": max_score, "verdict": verdict,
            "public": {"score": sum(t.score for t in public), "max_score": sum(t.points for t in public)},
            "hidden": {"score": sum(t.score for t in hidden), "max_score": sum(t.points for t in hidden)},
            "hidden_tests_removed": released, "skipped": [t.nodeid for t in skipped]}


def to_json(results: list[ExerciseResult], released: bool) -> dict:
    return {
        **summary(results, released),
        "exercises": [{
            "name": r.name, "score": r.score, "max_score": r.max_score, "error": r.error,
            "seconds": round(r.seconds, 2),
            "tests": [{"name": t.name, "nodeid": t.nodeid, "points": t.points, "score": t.score,
                       "outcome": t.outcome, "hidden": t.hidden, "gpu": t.gpu,
                       "message": t.message[-2000:]} for t in r.tests],
        } for r in results],
    }


def table(results: list[ExerciseResult], released: bool, verbose: bool = False) -> str:
    rows = []
    w = max([len(t.name) for r in results for t in r.tests] + [20])
    for r in results:
        rows.append(f"{r.name}  {_fmt(r.score)}/{_fmt(r.max_score)}" + (f"  ({r.error.splitlines()[0]})" if r.error else ""))
        for t in r.tests:
            mark = {"passed": "ok  ", "failed": "FAIL", "skipped": "skip"}[t.outcome]
            tag = " [hidden]" if t.hidden else ""
            pts = f"{_fmt(t.score)}/{_fmt(t.points)}" if t.outcome != "skipped" else f"-/{_fmt(t.points)}"
            rows.append(f"  {mark} {t.name:<{w}} {pts:>7}{tag}")
            if t.outcome == "failed" and t.message:
                lines = [ln for ln in t.message.strip().splitlines() if ln.strip()]
                shown = lines[-(12 if verbose else 3):]
                rows += ["        " + ln[:150] for ln in shown]
            elif t.outcome == "skipped" and verbose:
                rows.append(f"        {t.message[:150]}")
    s = summary(results, released)
    rows.append("")
    rows.append(f"score {_fmt(s['score'])}/{_fmt(s['max_score'])}  (public "
                f"{_fmt(s['public']['score'])}/{_fmt(s['public']['max_score'])}"
                + (f", hidden {_fmt(s['hidden']['score'])}/{_fmt(s['hidden']['max_score'])}"
                   if s["hidden"]["max_score"] else "") + f"): {s['verdict']}")
    if s["skipped"]:
        rows.append(f"{len(s['skipped'])} GPU test(s) skipped (no Hopper GPU here); not counted")
    return "\n".join(rows)


def gradescope(results: list[ExerciseResult], released: bool) -> dict:
    s = summary(results, released)
    tests = []
    for r in results:
        if r.error and not r.tests:
            tests.append({"name": f"{r.name}: grading error", "score": 0, "max_score": 0,
                          "status": "failed", "output": r.error[-4000:], "visibility": "visible"})
        for t in r.tests:
            if t.outcome == "skipped":
                continue
            tests.append({
                "name": f"{r.name}: {t.name}" + (" (hidden)" if t.hidden else ""),
                "score": t.score, "max_score": t.points,
                "status": "passed" if t.outcome == "passed" else "failed",
                "output": (t.doc + ("\n\n" + t.message[-4000:] if t.outcome == "failed" else "")).strip(),
                "visibility": "after_published" if t.hidden else "visible",
            })
    return {"score": s["score"], "output": f"{s['verdict']}: {_fmt(s['score'])}/{_fmt(s['max_score'])}",
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def dumps(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)
