"""python -m exercises {list,grade,release}: see exercises/README.md."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .grading import report, runner
from .grading.source import meta


def cmd_list(args) -> int:
    from .grading.runner import PACKAGE
    for ex in runner.exercises():
        m = meta(PACKAGE / ex)
        print(f"{ex:<24} ch{m['chapter']}  {m['title']}  (you write: {', '.join(m['submission'])})")
    return 0


def _unisolated() -> bool:
    """Say why nothing is graded where a submission would run as root (`runner.unisolated`)."""
    why = runner.unisolated()
    if why:
        print(f"not graded: {why}", file=sys.stderr)
    return bool(why)


def cmd_grade(args) -> int:
    path = Path(args.path).resolve() if args.path else runner.PACKAGE
    if not path.exists():
        print(f"no such submission: {path}", file=sys.stderr)
        return 2
    if _unisolated():
        return 2
    results = runner.grade(path, args.only, args.jobs, args.timeout, args.k, args.test,
                           identity=args.student or "")
    released = runner.released()
    if args.json:
        print(report.dumps(report.to_json(results, released)))
    else:
        print(report.table(results, released, args.verbose))
    gs = args.gradescope or ("/autograder/results/results.json" if Path("/autograder/results").is_dir() else None)
    if gs:
        Path(gs).parent.mkdir(parents=True, exist_ok=True)
        Path(gs).write_text(report.dumps(report.gradescope(results, released)))
        if not args.json:
            print(f"wrote {gs}")
    if args.require_full:
        s = report.summary(results, released)
        return 0 if s["max_score"] > 0 and s["score"] == s["max_score"] else 1
    return 0


def cmd_grade_class(args) -> int:
    from .grading import grade_class as gc
    class_dir = Path(args.dir)
    if not class_dir.is_dir():
        print(f"no such class folder: {class_dir}", file=sys.stderr)
        return 2
    if _unisolated():
        return 2
    res = gc.grade_class(class_dir.resolve(), Path(args.out).resolve(), args.jobs, args.only,
                         args.timeout, args.student_timeout, dedup=not args.no_dedup)
    print(gc.summary_table(res))
    print(f"wrote {Path(args.out) / 'gradebook.csv'}, {Path(args.out) / 'reports'}/ and "
          f"{Path(args.out) / 'timing.json'}")
    return 0 if res["complete"] else 1


def cmd_release(args) -> int:
    from .grading.release import release
    out = release(Path(args.dest), force=args.force)
    print(f"wrote the student copy to {out}")
    return 0


def cmd_gradescope(args) -> int:
    from .grading.release import gradescope_zip
    print(f"wrote {gradescope_zip(Path(args.out))} (upload it as the Gradescope autograder)")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m exercises", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the exercises and the files a student writes")
    g = sub.add_parser("grade", help="grade a submission (a copy of the repo, its exercises/ folder, "
                                     "or one exercise folder); default: this tree")
    g.add_argument("path", nargs="?")
    g.add_argument("--only", action="append", metavar="EXERCISE", help="grade only this exercise (repeatable)")
    g.add_argument("-k", metavar="EXPR", help="only tests matching this pytest -k expression")
    g.add_argument("--test", metavar="NAME", help="only the test of exactly this name")
    g.add_argument("--json", action="store_true", help="print the results as JSON")
    g.add_argument("--student", metavar="NAME", help="who is graded: seeds the hidden values "
                   "and picks the sandbox's uid (the same NAME draws the same in a regrade)")
    g.add_argument("--gradescope", metavar="FILE", help="also write Gradescope's results.json here "
                   "(default /autograder/results/results.json when that folder exists)")
    g.add_argument("--timeout", type=int, default=runner.DEFAULT_TEST_TIMEOUT, help="seconds per test")
    g.add_argument("--jobs", type=int, default=None, help="exercises graded at once (default: cores)")
    g.add_argument("--require-full", action="store_true", help="exit 1 unless every graded point was earned")
    g.add_argument("-v", "--verbose", action="store_true")
    c = sub.add_parser("grade-class", help="grade every student in DIR (folders or .zip files): "
                                           "OUT/gradebook.csv and OUT/reports/")
    c.add_argument("dir")
    c.add_argument("--out", default="grades", help="output folder (default ./grades)")
    c.add_argument("--only", action="append", metavar="EXERCISE", help="grade only this exercise (repeatable)")
    c.add_argument("--jobs", type=int, default=None, help="gradings at once (default: cores)")
    c.add_argument("--timeout", type=int, default=runner.DEFAULT_TEST_TIMEOUT, help="seconds per test")
    c.add_argument("--student-timeout", type=float, default=1800,
                   help="wall-clock seconds of grading per student (default 1800)")
    c.add_argument("--no-dedup", action="store_true",
                   help="grade every student's files even when another student's are byte-identical")
    r = sub.add_parser("release", help="write the student copy")
    r.add_argument("dest")
    r.add_argument("--force", action="store_true", help="replace DEST if it exists")
    z = sub.add_parser("gradescope", help="write the Gradescope autograder zip (source tests, hidden included)")
    z.add_argument("out")
    args = p.parse_args(argv)
    return {"list": cmd_list, "grade": cmd_grade, "release": cmd_release, "grade-class": cmd_grade_class,
            "gradescope": cmd_gradescope}[args.cmd](args)


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.exit(main())
