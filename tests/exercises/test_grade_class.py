"""`python -m exercises grade-class`: a generated class with known scores gives exactly the expected
gradebook; zips are unpacked safely; a student whose submission hangs loses only its own points."""
from __future__ import annotations

import csv
import json
import shutil
import stat
import uuid
import zipfile
from pathlib import Path

import pytest

from exercises.__main__ import main
from exercises.grading import runner
from exercises.grading.grade_class import Refused, make_class, safe_extract
from exercises.grading.source import strip, submission_files

PKG = runner.PACKAGE
ONLY = ["ch00_rates", "ch01_ring", "ch04_online_softmax"]        # the quick ones
WRONG = "ch01_off_by_one_slot"                                   # loses three ch01_ring tests
HANG = "ch00_softmax_hangs"                                      # softmax_clk never returns


def _loses(stem: str) -> set[str]:
    for line in (PKG / "wrong" / f"{stem}.py").read_text().splitlines():
        if line.startswith("# loses:"):
            return {x.strip() for x in line.split(":", 1)[1].split(",")}
    raise AssertionError(stem)


def _write(root: Path, kind: str, wrong: str | None = None, flat: bool = False) -> None:
    for ex in runner.exercises():
        for rel in submission_files(PKG / ex):
            text = (PKG / ex / rel).read_text()
            if kind == "stub":
                text = strip(text)
            if wrong and f"# exercise: {ex}\n# file: {rel}\n" in (PKG / "wrong" / f"{wrong}.py").read_text():
                text = (PKG / "wrong" / f"{wrong}.py").read_text()
            target = root / rel if flat else root / "exercises" / ex / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("gradeclass")
    cls = base / "class"
    cls.mkdir()
    _write(cls / "alice", "source")                          # full marks
    _write(cls / "bob", "stub")                              # zero
    _write(cls / "carol", "source", WRONG)                   # loses WRONG's tests
    inner = base / "dave-src" / "dave-main"                  # a zip with one folder inside
    _write(inner, "source", flat=True)
    with zipfile.ZipFile(cls / "dave.zip", "w") as z:
        for f in sorted(inner.rglob("*")):
            z.write(f, f"dave-main/{f.relative_to(inner)}")
    escape = f"gc_escape_{uuid.uuid4().hex}.txt"             # a zip that climbs out: refused
    with zipfile.ZipFile(cls / "eve.zip", "w") as z:
        z.writestr("eve/exercises/ch00_rates/rates.py", "x = 1\n")
        z.writestr(f"eve/../../{escape}", "escaped\n")
    _write(cls / "frank", "stub", HANG)                      # hangs: past his budget, killed
    (cls / "notes.txt").write_text("not a student\n")
    out = base / "out"
    rc = main(["grade-class", str(cls), "--out", str(out), "--jobs", "2", "--timeout", "20",
               "--student-timeout", "30", *[a for ex in ONLY for a in ("--only", ex)]])
    return {"rc": rc, "out": out, "base": base, "escape": escape}


def test_gradebook_is_exactly_the_expected_one(graded):
    out = graded["out"]
    alice = json.loads((out / "reports" / "alice.json").read_text())
    full = {e["name"]: e["max_score"] for e in alice["exercises"]}
    assert [e["name"] for e in alice["exercises"]] == ONLY
    assert all(e["score"] == e["max_score"] > 0 for e in alice["exercises"])
    points = {t["name"]: t["points"] for e in alice["exercises"] for t in e["tests"]}
    lost = sum(points[t] for t in _loses(WRONG))
    hang_lost = sum(points[t] for t in _loses(HANG))
    assert 0 < lost < full["ch01_ring"] and hang_lost > 0
    m = sum(full.values())
    g = lambda x: f"{x:g}"  # noqa: E731
    rows = list(csv.reader((out / "gradebook.csv").open()))
    assert rows[0] == ["student", *ONLY, "total", "max", "status"]
    body = {r[0]: r for r in rows[1:]}
    assert [r[0] for r in rows[1:]] == ["alice", "bob", "carol", "dave", "eve", "frank"]
    assert body["alice"] == ["alice", *[g(full[e]) for e in ONLY], g(m), g(m), "ok"]
    assert body["bob"] == ["bob", "0", "0", "0", "0", g(m), "ok"]
    assert body["carol"] == ["carol", g(full["ch00_rates"]), g(full["ch01_ring"] - lost),
                             g(full["ch04_online_softmax"]), g(m - lost), g(m), "ok"]
    assert body["dave"] == ["dave", *[g(full[e]) for e in ONLY], g(m), g(m), "ok"]
    assert body["eve"][:6] == ["eve", "0", "0", "0", "0", g(m)]
    assert body["eve"][6].startswith("refused:") and "'..'" in body["eve"][6]
    assert body["frank"][:6] == ["frank", "0", "0", "0", "0", g(m)]
    assert body["frank"][6].startswith("ch00_rates: killed after 30 s"), body["frank"][6]
    for r in rows[1:]:                                      # totals are the sums of the columns
        assert float(r[4]) == sum(float(x) for x in r[1:4])
    assert graded["rc"] == 1                                # eve refused, frank cut off


def test_reports_and_isolation(graded):
    out, base = graded["out"], graded["base"]
    for s in ("alice", "bob", "carol", "dave", "eve", "frank"):
        assert (out / "reports" / f"{s}.json").is_file() and (out / "reports" / f"{s}.txt").is_file()
    carol = json.loads((out / "reports" / "carol.json").read_text())
    failed = {t["name"] for e in carol["exercises"] for t in e["tests"] if t["outcome"] == "failed"}
    assert failed == _loses(WRONG)
    assert "FAIL" in (out / "reports" / "carol.txt").read_text()
    frank = json.loads((out / "reports" / "frank.json").read_text())
    assert not frank["exercises"][0]["graded"] and "killed" in frank["exercises"][0]["error"]
    for d in (base, base.parent, Path("/tmp")):
        assert not (d / graded["escape"]).exists()


def _zip(path: Path, entries):
    with zipfile.ZipFile(path, "w") as z:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            if mode:
                info.external_attr = mode << 16
            z.writestr(info, data)


@pytest.mark.parametrize("entry,why", [("/etc/evil.py", "absolute"), ("a/../../evil.py", "'..'"),
                                       ("C:/evil.py", "absolute"), ("a\\..\\..\\evil.py", "'..'")])
def test_zip_entries_that_escape_are_refused(tmp_path, entry, why):
    _zip(tmp_path / "s.zip", [("ok/rates.py", "x = 1\n", 0), (entry, "boom\n", 0)])
    (tmp_path / "x").mkdir()
    with pytest.raises(Refused, match=why):
        safe_extract(tmp_path / "s.zip", tmp_path / "x")
    assert not any((tmp_path / "x").rglob("*"))            # nothing written before the check


def test_zip_symlink_is_refused(tmp_path):
    _zip(tmp_path / "s.zip", [("link", "/etc/passwd", stat.S_IFLNK | 0o777)])
    (tmp_path / "x").mkdir()
    with pytest.raises(Refused, match="symlink"):
        safe_extract(tmp_path / "s.zip", tmp_path / "x")


def test_make_class_pattern(tmp_path):
    plan = make_class(tmp_path / "c", 8)
    assert [v[0] for v in plan.values()] == ["source", "stub", "wrong", "zip"] * 2
    assert (tmp_path / "c" / "s003_zip.zip").is_file() and (tmp_path / "c" / "s000_source").is_dir()
    shutil.rmtree(tmp_path / "c")
