"""Gradescope, end to end, with and without a mount namespace: `setup.sh` on a stock Debian
python (an externally-managed pip: the venv takes the packages) and `run_autograder` grading a
submission that reads the solution from the autograder's own source folder. With `unshare` the
sandbox's allow-list view hides the folder; without it (``EXERCISES_NO_NAMESPACES=1``, as in a
container without unshare) the modes setup.sh sets (source 0700, the student's own uid) hide it.
Either way the submission scores 0 on that exercise and the report names the isolation in force.
(Main's setup.sh left the source world-readable and nothing named the isolation.)"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pytest

from exercises.grading.release import gradescope_zip
from exercises.grading.source import strip

PKG = Path(__file__).resolve().parents[2] / "exercises"
STOCK = "/usr/bin/python3"

PROBE = '''
def _borrow(path):
    try:
        text = open(path).read()
    except OSError:
        return None
    return text if "BEGIN SOLUTION" in text else None


_found = _borrow({path!r})
if _found:
    exec(compile(_found, "borrowed", "exec"), globals())
'''


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    if os.geteuid() != 0 or not Path(STOCK).exists():
        pytest.skip("needs root (the uid drop) and a stock /usr/bin/python3")
    ag = Path(tempfile.mkdtemp(prefix="gs-ag-"))       # not under pytest's 0700 tmp folders
    os.chmod(ag, 0o711)
    z = gradescope_zip(tmp_path_factory.mktemp("zip") / "autograder.zip")
    with zipfile.ZipFile(z) as zf:
        zf.extractall(ag / "source")
    for name in ("setup.sh", "run_autograder"):
        os.chmod(ag / "source" / name, 0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSAFEPATH")}
    env.update(AUTOGRADER_ROOT=str(ag), AUTOGRADER_PYTHON=STOCK, AUTOGRADER_KERNELS="0")
    p = subprocess.run(["bash", str(ag / "source" / "setup.sh")], cwd=ag, env=env,
                       capture_output=True, text=True, timeout=900, check=False)
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    shutil.copy2(ag / "source" / "run_autograder", ag / "run_autograder")
    yield ag, env
    shutil.rmtree(ag, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("namespaces", [True, False], ids=["unshare", "no-unshare"])
def test_run_autograder_hides_the_solution(autograder, namespaces):
    ag, env = autograder
    sub = ag / "submission"
    shutil.rmtree(sub, ignore_errors=True)
    sub.mkdir()
    solution = ag / "source" / "exercises" / "ch00_rates" / "rates.py"
    stub = strip((PKG / "ch00_rates" / "rates.py").read_text())
    (sub / "rates.py").write_text(stub + PROBE.format(path=str(solution)))
    (ag / "submission_metadata.json").write_text(json.dumps({"users": [{"id": 7}]}))
    run_env = {**env, **({} if namespaces else {"EXERCISES_NO_NAMESPACES": "1"})}
    q = subprocess.run([str(ag / "run_autograder")], cwd=ag, env=run_env, capture_output=True,
                       text=True, timeout=1200, check=False)
    assert q.returncode == 0, (q.stdout[-3000:], q.stderr[-3000:])
    gs = json.loads((ag / "results" / "results.json").read_text())
    mine = [t for t in gs["tests"] if t["name"].startswith("ch00_rates")]
    assert mine and all(t["score"] == 0 for t in mine), mine
    iso = [ln for ln in q.stdout.splitlines() if ln.startswith("isolation:")]
    assert iso, q.stdout[-3000:]
    if namespaces:
        assert all("allow-list" in ln for ln in iso), iso
    else:
        assert all("hidden only by file permissions" in ln and "NOT" not in ln for ln in iso), iso
    assert gs["extra_data"]["isolation"] and all(ln.split(": ", 1)[1] in gs["extra_data"]["isolation"]
                                                 for ln in iso), gs["extra_data"]
    assert oct(os.stat(ag / "source").st_mode & 0o777) == "0o700"
    # the previous submissions' results (hidden outcomes, the full table) are the grader's alone
    assert os.stat(ag / "submission_metadata.json").st_mode & 0o077 == 0
