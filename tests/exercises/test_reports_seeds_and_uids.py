"""Per-student draws depend on the bytes handed in; dedup never shares a verdict drawn for one
student; no two students of a class share a uid."""
from __future__ import annotations

import shutil

from exercises.grading import budget, runner
from exercises.grading import grade_class as gc

PKG = runner.PACKAGE


def _sub(root, ex, name, text):
    d = root / "exercises" / ex
    d.mkdir(parents=True)
    (d / name).write_text(text)
    return root


def test_hidden_draws_depend_on_the_files(tmp_path):
    """A regrade of the same files draws the same values; another file (say one that holds the
    answers to the values the first drew) draws others; another student others again."""
    a = _sub(tmp_path / "a", "ch00_rates", "rates.py", "x = 1\n")
    b = _sub(tmp_path / "b", "ch00_rates", "rates.py", "x = 2\n")
    da = runner.submission_digest("ch00_rates", runner.find_submission(a, "ch00_rates"))
    db = runner.submission_digest("ch00_rates", runner.find_submission(b, "ch00_rates"))
    assert da != db
    assert da == runner.submission_digest("ch00_rates", runner.find_submission(a, "ch00_rates"))
    ids = {runner.seed_identity("carol", da), runner.seed_identity("carol", db),
           runner.seed_identity("dave", da)}
    assert len(ids) == 3 and runner.seed_identity("", da) == ""
    hidden = PKG / "ch00_rates" / "hidden" / "test_hidden.py"

    def draws(sid):
        mod = runner._seeded_import(hidden, sid)
        return {k: repr(v) for k, v in vars(mod).items()
                if k.isupper() and not k.startswith("_") and not callable(v)}

    d1, d2 = draws(runner.seed_identity("carol", da)), draws(runner.seed_identity("carol", db))
    assert d1 != d2, "another file drew the same hidden values"
    assert draws(runner.seed_identity("carol", da)) == d1, "a regrade drew other values"


def test_same_bytes_of_two_students_are_keyed_apart(tmp_path):
    a = _sub(tmp_path / "carol", "ch00_rates", "rates.py", "x = 1\n")
    b = _sub(tmp_path / "dave", "ch00_rates", "rates.py", "x = 1\n")
    assert runner.seeded("ch00_rates")
    assert gc.content_key(a, "ch00_rates", 60) == gc.content_key(b, "ch00_rates", 60)
    assert (gc.content_key(a, "ch00_rates", 60, "carol")
            != gc.content_key(b, "ch00_rates", 60, "dave"))
    assert (gc.content_key(a, "ch00_rates", 60, "carol")
            == gc.content_key(b, "ch00_rates", 60, "carol"))


def test_a_class_grades_same_bytes_for_each_student(tmp_path):
    src = PKG / "ch05_idle" / "idle.py"
    for who in ("carol", "dave"):
        d = tmp_path / "class" / who / "exercises" / "ch05_idle"
        d.mkdir(parents=True)
        shutil.copyfile(src, d / "idle.py")
    res = gc.grade_class(tmp_path / "class", tmp_path / "out", jobs=1, only=["ch05_idle"],
                         quiet=True)
    assert res["distinct"] == 2, "one student's verdict was shared with the other"
    import json
    for who in ("carol", "dave"):
        rep = json.loads((tmp_path / "out" / "reports" / f"{who}.json").read_text())
        assert all("same_bytes_as" not in e for e in rep["exercises"])


def test_uids_are_keyed_and_never_shared_in_a_class(monkeypatch):
    monkeypatch.setattr(budget, "_ASSIGNED", {})
    # keyed: the number depends on the salt, not on the name alone
    monkeypatch.setenv("EXERCISES_SEED_SALT", "one")
    u1 = budget._uid_number("alice")
    monkeypatch.setenv("EXERCISES_SEED_SALT", "two")
    assert budget._uid_number("alice") != u1
    # two names forced onto one number: the class gives them two uids, in sorted-name order
    monkeypatch.setattr(budget, "_uid_number", lambda name: 12345)
    assert budget.student_uid("alice") == budget.student_uid("mallory")     # outside a class
    got = budget.assign_uids(["mallory", "alice"])
    assert got["alice"] != got["mallory"]
    assert got["alice"] == budget.student_uid("alice")
    assert got["mallory"] == budget.student_uid("mallory")
    assert got == budget.assign_uids(["alice", "mallory"])                  # the same every run
    assert all(budget.UID_BASE <= u < budget.UID_BASE + budget.UID_SPAN for u in got.values())
