"""The grader's trust tests: the trusted side computes what it judges, the sandbox sees by
allow-list, one student one budget, hidden values per student, and a leak scan of
the whole release. Each test names what it would catch failing against main's grader (31d10ae)."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from exercises.grading import grade_class as gc
from exercises.grading import leaks, runner
from exercises.grading.kernel_source import KernelRefused, kernel_module
from exercises.grading.sandbox import run_untrusted

PKG = runner.PACKAGE
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop, the namespace and the "
                             "cgroup need root (CI and Gradescope run as root)")
KERNEL = '''
import os
import triton
import triton.language as tl
import torch

BLOCK = 16
TWICE = BLOCK * 2

@triton.jit
def kernel(X, N, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(X + offs, tl.load(X + offs, mask=offs < N) * 2, mask=offs < N)

torch.full = None
def host(x):
    return kernel[(1,)](x, 4, BLOCK)
'''


# ------------------------------------------------------------------------------ class 3
def test_kept_kernel_is_the_kernel_alone():
    """Only imports of Triton, constants and the jit function survive; module-level code (the
    rebinding of torch.full, host functions, `import os`) is gone, line numbers are kept."""
    kept = kernel_module(KERNEL)
    assert "def kernel(" in kept and "TWICE = BLOCK * 2" in kept
    assert "torch" not in kept and "import os" not in kept and "def host" not in kept
    assert kept.splitlines().index("def kernel(X, N, B: tl.constexpr):") == \
        KERNEL.splitlines().index("def kernel(X, N, B: tl.constexpr):")


@pytest.mark.parametrize("body, why", [
    ("    import os\n", "import"),
    ("    x = X.__class__\n", "'__class__'"),
    ("    h = X.handle\n", "'handle'"),
    ("    np = triton.runtime\n", "not Triton's language"),
    ("    f = open\n", "'open'"),
    ("    tl.core.builtins.exec('0', {})\n", "the module 'builtins'"),
    ("    s = tl.core.knobs.os.system\n", "the module 'triton.knobs'"),
    ("    c = tl.core\n    c.builtins.exec('0')\n", "used as a value"),
    ("    j = tl.core.JITFunction\n", "not in Triton's language"),
])
def test_kernel_body_reaches_only_the_language(body, why):
    """Inside a kept kernel (which the interpreter runs as Python) no import, no '_' attribute,
    no interpreter handle, no module but Triton's language (nor a path through it to Python's
    builtins, Triton's knobs or a module held as a value), no builtin outside a short list."""
    src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(X):\n" + body
    with pytest.raises(KernelRefused, match=why):
        kernel_module(src)


REFUSED_KERNELS = {"cheat_trusted_tl_exec_escape.py"}     # known-wrong: their kernels leave tl


def test_solutions_and_wrong_kernels_are_kept():
    for f in [PKG / "ch02_ws_gluon" / "ws_gemm.py", PKG / "ch04_tl_attention" / "attention_tl.py",
              *[p for p in (PKG / "wrong").glob("*.py") if "# exercise: ch02_ws_gluon" in
                p.read_text() or "# exercise: ch04_tl_attention" in p.read_text()]]:
        if f.name in REFUSED_KERNELS:
            with pytest.raises(KernelRefused):
                kernel_module(f.read_text(), f.name)
        else:
            assert "@" in kernel_module(f.read_text(), f.name), f


# ------------------------------------------------------------------------------ class 4
PROBE = '''
import os
def main(p):
    out = {}
    for d in p:
        try:
            out[d] = sorted(os.listdir(d))
        except OSError as e:
            out[d] = "error: " + e.strerror
    if p and p[-1] == "/dev/shm":
        open("/dev/shm/left-behind", "w").write("for the next student")
    return out
'''


@as_root
def test_view_is_an_allow_list(tmp_path):
    """Beside the interpreter's virtual environment nothing shows (main's grader showed the whole
    checkout the venv lives in: /work/main/exercises with the solutions), and /dev/shm is
    private: what one run leaves there the next does not see (main shared the host's)."""
    (tmp_path / "probe.py").write_text(PROBE)
    venv_parent = str(Path(sys.prefix).resolve().parent)
    out = run_untrusted("probe:main", [venv_parent, "/dev/shm"], None,
                        {"probe.py": tmp_path / "probe.py"}, timeout_s=60)
    assert out.ok, out.error
    assert out.value[venv_parent] == [Path(sys.prefix).resolve().name], out.value
    again = run_untrusted("probe:main", ["/dev/shm"], None, {"probe.py": tmp_path / "probe.py"},
                          timeout_s=60)
    assert "left-behind" not in again.value["/dev/shm"], again.value
    assert "allow-list" in again.isolation.summary()


@as_root
def test_the_models_engine_is_not_in_view(tmp_path):
    """simpy, on which the course's model runs, is covered in the sandbox (a submission that
    carries a copy of the model cannot run it there); numpy, which submissions use, is not."""
    (tmp_path / "probe.py").write_text(
        "def main(p):\n    out = {}\n    for m, name in p:\n        try:\n"
        "            getattr(__import__(m), name)\n            out[m] = 'imported'\n"
        "        except (ImportError, AttributeError) as e:\n            out[m] = str(e)\n"
        "    return out\n")
    out = run_untrusted("probe:main", [["simpy", "Environment"], ["numpy", "zeros"]], None,
                        {"probe.py": tmp_path / "probe.py"}, timeout_s=60)
    assert out.ok, out.error
    assert out.value["numpy"] == "imported" and out.value["simpy"] != "imported", out.value


def test_a_submission_file_over_the_size_limit_is_refused(tmp_path):
    """A file past `runner.SUBMISSION_MAX_BYTES` (room for comments, not for a packed copy of
    the model) fails every test of its exercise with a message naming the limit."""
    sub = tmp_path / "ch05_idle"
    sub.mkdir()
    solution = (PKG / "ch05_idle" / "idle.py").read_text()
    (sub / "idle.py").write_text(solution + "\n#" + "x" * runner.SUBMISSION_MAX_BYTES + "\n")
    res = runner.run_exercise("ch05_idle", tmp_path, keyword="exposed_softmax")
    assert res.tests and all(t.outcome == "failed" for t in res.tests), res.tests
    assert all(f"limit of {runner.SUBMISSION_MAX_BYTES} bytes" in t.message for t in res.tests)
    (sub / "idle.py").write_text(solution)
    res = runner.run_exercise("ch05_idle", tmp_path, keyword="exposed_softmax")
    assert all(t.outcome == "passed" for t in res.tests), res.tests


DISK_FILLER = '''
import os
def main(p):
    written = 0
    try:
        for i in range(p["files"]):
            with open(f"fill{i}", "wb") as f:
                f.write(b"x" * p["each"])
            written += p["each"]
    except OSError as e:
        return {"written": written, "error": str(e)}
    return {"written": written, "error": ""}
'''


@as_root
def test_all_a_run_writes_is_bounded(tmp_path):
    """Every file under the per-file limit, together past the folder's: the run's folder is a
    tmpfs of `max_work_bytes`, so the writes stop there (main's sandbox wrote 1.8 GiB in one test
    of 30 files of 60 MiB each, onto the host's disk), and the limit is named."""
    (tmp_path / "fill.py").write_text(DISK_FILLER)
    mib = 1 << 20
    out = run_untrusted("fill:main", {"files": 8, "each": 3 * mib}, None,
                        {"fill.py": tmp_path / "fill.py"}, timeout_s=60,
                        max_write_bytes=4 * mib, max_work_bytes=16 * mib)
    assert out.ok, out.error
    assert 12 * mib <= out.value["written"] <= 16 * mib, out.value
    assert "No space left on device" in out.value["error"]
    assert "its folder a tmpfs of 16 MiB" in out.isolation.summary()


NET_PROBE = '''
import socket
def main(p):
    out = {}
    for host, port in p:
        try:
            socket.create_connection((host, port), timeout=2).close()
            out[host] = "connected"
        except OSError as e:
            out[host] = type(e).__name__ + ": " + str(e)
    return out
'''


@as_root
def test_a_run_reaches_no_network(tmp_path):
    """A run has a network namespace of its own: a server the grader's host listens on (here, on
    its loopback) is out of reach, so a submission can neither send its hidden inputs out nor
    fetch answers from an oracle (main's sandbox reached the host's loopback and DNS)."""
    import socket
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def serve():
        try:
            srv.accept()
        except OSError:                      # closed below while nothing reached it
            pass
    threading.Thread(target=serve, daemon=True).start()
    (tmp_path / "net.py").write_text(NET_PROBE)
    out = run_untrusted("net:main", [["127.0.0.1", port]], None, {"net.py": tmp_path / "net.py"},
                        timeout_s=60)
    srv.close()
    assert out.ok, out.error
    if out.isolation.network:               # unshare refused --net here: the report says so
        assert "the network reachable" in out.isolation.summary()
        return
    assert out.value["127.0.0.1"] != "connected", out.value
    assert "no network" in out.isolation.summary()


def test_no_namespace_report_says_so(tmp_path):
    """Without a namespace the report says what hides the solution (permissions) or that
    nothing does."""
    (tmp_path / "probe.py").write_text(PROBE)
    out = run_untrusted("probe:main", [], None, {"probe.py": tmp_path / "probe.py"},
                        timeout_s=60, namespaces=False)
    assert out.ok, out.error
    assert "no namespace" in out.isolation.summary()


# ------------------------------------------------------------------------------ class 6
def test_hidden_values_per_student_reproducible():
    """The generators of the test modules are reseeded per (student, test): two students draw
    different values, one student the same values again (main drew once per grade-class run)."""
    case = next(c for c in runner.collect("ch04_tl_attention") if c.name.startswith("test_"))
    mod = runner._modules[Path(case.fn.__code__.co_filename).resolve()]

    def draw(who):
        runner.reseed(case, who)
        return mod.RNG.integers(0, 1 << 30, 4).tolist()
    assert draw("alice") == draw("alice")
    assert draw("alice") != draw("bob")
    assert runner.seed("alice", "t") != runner.seed("bob", "t")


def test_hidden_import_draws_per_student():
    """A hidden test module's import-time draws (``random.SystemRandom()``: ch00_rates' hidden
    hardware) are the student's own and the same in a regrade; the stdlib is left as it was."""
    import random

    def hidden_values(who):
        case = next(c for c in runner.collect("ch00_rates", identity=who) if c.hidden)
        g = case.fn.__globals__
        return g["SLOW_HW"].wgmma_overhead_clk, g["OTHER"], g["OTHER_SOFTMAX"]
    alice = hidden_values("alice")
    assert hidden_values("bob") != alice
    assert hidden_values("alice") == alice
    assert random.SystemRandom is not random.Random and \
        type(random.SystemRandom()).__name__ == "SystemRandom"


def test_seed_salt_is_the_instructors_secret(tmp_path, monkeypatch):
    """The per-student seeds are salted with a secret the instructor's tree makes once (mode
    0600, the same in every later run: a regrade draws the same values), never the empty salt a
    student could hash their own name with; EXERCISES_SEED_SALT overrides it; the release leaves
    the file out and refuses a copy that holds it."""
    from exercises.grading import release
    salt_file = tmp_path / "SEED_SALT"
    monkeypatch.setattr(runner, "SALT_FILE", salt_file)
    monkeypatch.delenv("EXERCISES_SEED_SALT", raising=False)
    monkeypatch.setattr(runner, "released", lambda tree=PKG: False)
    salt = runner.seed_salt()
    assert len(salt) == 64 and salt_file.stat().st_mode & 0o777 == 0o600
    assert runner.seed_salt() == salt and runner.seed("alice", "t") == runner.seed("alice", "t")
    monkeypatch.setenv("EXERCISES_SEED_SALT", "")
    unsalted = __import__("hashlib").sha256("\x00".join(["", "alice", "t"]).encode()).digest()
    assert runner.seed("alice", "t") != int.from_bytes(unsalted[:8], "big")
    monkeypatch.setenv("EXERCISES_SEED_SALT", "chosen")
    assert runner.seed_salt() == "chosen"
    assert shutil.ignore_patterns(*release.SKIP)(str(tmp_path), ["SEED_SALT", ".SEED_SALT.7"]) \
        == {"SEED_SALT", ".SEED_SALT.7"}
    monkeypatch.setattr(release, "SALT_FILE", salt_file)
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "notes.txt").write_text(f"salt: {salt}\n")
    with pytest.raises(release.LeakError, match="seed salt"):
        release.check_no_salt(tmp_path / "copy")


# ------------------------------------------------------------------------------ class 7
FAKE_EXERCISE = """
def parity(j, stages):
    \"\"\"The producer's wait parity.\"\"\"
    ### BEGIN SOLUTION
    return ((j // stages) & 1) ^ 1
    ### END SOLUTION


def launch(gl, roles, workers, regs):
    ### BEGIN SOLUTION
    gl.warp_specialize(roles, [workers], [regs])
    ### END SOLUTION


def consumer(cta, w, j):
    ### BEGIN SOLUTION
    yield from wait_turn(cta, w, j)
    yield cta.qk(w, j)
    pass_turn(cta, w)
    ### END SOLUTION
"""


def _fake_course(tmp_path):
    pkg = tmp_path / "exercises"
    (pkg / "ch99_demo").mkdir(parents=True)
    (pkg / "ch99_demo" / "demo.py").write_text(FAKE_EXERCISE)
    dest = tmp_path / "rel"
    (dest / "sim").mkdir(parents=True)
    (dest / "sim" / "clean.py").write_text("def f(a, b):\n    return a + b\n")
    return pkg, dest


def test_leak_scan_finds_planted_leaks(tmp_path):
    """A course whose only exercise asks for a wait parity, a warp_specialize call and a turn
    order: its release is clean until a file anywhere in it (not only exercises/) holds the
    parity under other names, the same order of steps, or a solution line: each reproduces its
    whole block, a leak. The same call alone is an idiom (a callee and its arguments' kinds say
    nothing of what the block computes). (Main scanned exercises/ only, for solution lines.)"""
    pkg, dest = _fake_course(tmp_path)
    assert leaks.scan(dest, pkg) == []
    (dest / "sim" / "laps.py").write_text("def may_refill(n, depth):\n"
                                         "    return 1 - (n // depth) % 2\n")
    (dest / "kernels").mkdir()
    (dest / "kernels" / "ws.py").write_text("def k(gl, parts, W, R):\n"
                                           "    gl.warp_specialize(parts, [W], [R])\n")
    (dest / "sim" / "pingpong.py").write_text("def consumer(cta, w, j):\n"
                                             "    yield from cta.wait_turn(w, j)\n"
                                             "    yield cta.qk(w, j)\n"
                                             "    cta.pass_turn(w)\n")
    (dest / "docs").mkdir()
    (dest / "docs" / "notes.md").write_text("the answer: return ((j // stages) & 1) ^ 1\n")
    found = {(f.kind, f.where.split(":")[0], f.kinds) for f in leaks.scan(dest, pkg)}
    assert found == {("leak", "sim/laps.py", ("same",)), ("idiom", "kernels/ws.py", ("call",)),
                     ("leak", "sim/pingpong.py", ("call", "line", "steps")),
                     ("leak", "docs/notes.md", ("line",))}, found


def test_leak_scan_tells_an_idiom_from_a_leak(tmp_path):
    """What the course's own code shares with a solution is not its answer: one of two waits
    (the block waits on two barriers; a loop waiting twice on one barrier answers one of them),
    a turn passed after the scores are waited for (the block passes it before the wait), a
    fragment of a longer computation. Each is an idiom below `LEAK_SHARE` of its block; the
    block copied under other names is a leak."""
    pkg = tmp_path / "exercises"
    (pkg / "ch98_demo").mkdir(parents=True)
    (pkg / "ch98_demo" / "demo.py").write_text('''
def consume(full_a, full_b, it, STAGES):
    ### BEGIN SOLUTION
    mbarrier.wait(full_a.index(it % STAGES), (it // STAGES) & 1)
    mbarrier.wait(full_b.index(it % STAGES), (it // STAGES) & 1)
    ### END SOLUTION


def consumer(cta, w, j):
    ### BEGIN SOLUTION
    yield from wait_turn(cta, w, j)
    scores = cta.qk(w, j)
    pass_turn(cta, w)
    yield scores
    ### END SOLUTION
''')
    dest = tmp_path / "rel"
    (dest / "kernels").mkdir(parents=True)
    (dest / "kernels" / "bench.py").write_text(
        "def bench(bars, n, DEPTH):\n"
        "    for i in range(n):\n"
        "        mbarrier.wait(bars.index(i % DEPTH), (i // DEPTH) & 1)\n"
        "        mbarrier.wait(bars.index(i % DEPTH), (i // DEPTH) & 1)\n")
    (dest / "kernels" / "model.py").write_text(
        "def consumer(cta, w, j):\n"
        "    yield from cta.wait_turn(w, j)\n"
        "    yield cta.qk(w, j)\n"
        "    cta.pass_turn(w)\n")
    found = leaks.scan(dest, pkg)
    assert found and not [f for f in found if f.leak], leaks.report(found)
    (dest / "kernels" / "copy.py").write_text(
        "def waits(a, b, k, S):\n"
        "    mbarrier.wait(a.index(k % S), (k // S) & 1)\n"
        "    mbarrier.wait(b.index(k % S), (k // S) & 1)\n"
        "def fa3(cta, w, j):\n"
        "    yield from cta.wait_turn(w, j)\n"
        "    s = cta.qk(w, j)\n"
        "    cta.pass_turn(w)\n"
        "    yield s\n")
    found = [f for f in leaks.scan(dest, pkg) if f.leak]
    assert {f.where for f in found} == {"kernels/copy.py:2", "kernels/copy.py:4"}, \
        leaks.report(found)


# ------------------------------------------------------------------------------ class 5
@as_root
def test_a_bomb_and_a_neighbour_reader_cost_no_one_else(tmp_path):
    """A class graded two at a time: two correct students, a fork bomb (spinning children until
    fork fails) and a student who walks the file system for a copy of the solution. Each correct
    student's total equals its total graded alone; the bomb's status names the process limit;
    the reader finds nothing and scores 0. (Main's grader: every sandbox is `nobody` under one
    process limit, no status names a limit, and the reader found the checkout beside the venv.)"""
    cls = tmp_path / "class"
    src = (PKG / "ch00_rates" / "rates.py").read_text()
    who = {"s1_ok": src, "s2_bomb": (PKG / "wrong" / "cheat_budget_fork_bomb.py").read_text(),
           "s3_reader": (PKG / "wrong" / "cheat_isolation_finds_a_checkout.py").read_text(),
           "s4_ok": src + "\n# s4\n"}
    for name, text in who.items():
        d = cls / name / "exercises" / "ch00_rates"
        d.mkdir(parents=True)
        (d / "rates.py").write_text(text)
    res = gc.grade_class(cls, tmp_path / "out", jobs=2, only=["ch00_rates"], dedup=False,
                         quiet=True)
    rows = {r["student"]: r for r in res["rows"]}
    for name in ("s1_ok", "s4_ok"):
        [alone] = runner.grade(cls / name, only=["ch00_rates"], jobs=1, identity=name)
        assert rows[name]["total"] == alone.score == alone.max_score, (rows[name], alone.score)
        assert rows[name]["status"] == "ok", rows[name]
    assert rows["s2_bomb"]["total"] == 0 and "process limit" in rows["s2_bomb"]["status"], \
        rows["s2_bomb"]
    assert rows["s3_reader"]["total"] == 0, rows["s3_reader"]
    shutil.rmtree(tmp_path / "out", ignore_errors=True)


def test_no_grading_where_the_submission_would_run_as_root(monkeypatch, capsys):
    """As root with no mount namespace, an interpreter under a dir other users cannot enter (a
    pyenv under /root) keeps the student's uid from running it: the submission would run as
    root and read the hidden tests. Nothing is graded then: `grade` says why and exits 2, and a
    programmatic grading carries the reason as the exercise's error, with no test run; the
    instructor's EXERCISES_ALLOW_UNISOLATED grades anyway."""
    from exercises import __main__ as cli
    from exercises.grading import sandbox
    import tempfile
    base = Path(tempfile.mkdtemp())            # pytest's own tmp_path is under a 0700 dir
    base.chmod(0o755)
    shut = base / "root"
    (shut / "py" / "lib").mkdir(parents=True)
    shut.chmod(0o700)
    py = shut / "py"
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    monkeypatch.setattr(sandbox, "_unshare_prefix", lambda: [])
    monkeypatch.setattr(sandbox, "_python_paths",
                        lambda: (str(py / "python"), [str(py / "lib")], []))
    monkeypatch.setattr(sandbox.sys, "prefix", str(py))
    monkeypatch.setattr(sandbox.sys, "base_prefix", str(py))
    monkeypatch.delenv("EXERCISES_ALLOW_UNISOLATED", raising=False)
    try:
        why = sandbox.root_without_isolation()
        assert str(shut) in why and "run as root" in why
        res = runner.run_exercise("ch00_rates", None)
        assert res.error.startswith("not graded: ") and not res.tests and res.score == 0
        assert cli.main(["grade", "--only", "ch00_rates"]) == 2
        assert "not graded: " in capsys.readouterr().err
        shut.chmod(0o755)                               # others may enter: safe again
        assert sandbox.root_without_isolation() == ""
        shut.chmod(0o700)
        monkeypatch.setenv("EXERCISES_ALLOW_UNISOLATED", "1")
        assert runner.unisolated() == ""
    finally:
        shutil.rmtree(base)


@as_root
def test_a_grading_without_a_name_is_a_student_of_its_own():
    """`grade` without `--student` (an instructor's two terminals, CI's parallel tests) is a
    student of its own: two such gradings at once run under two uids and two cgroups, so a
    process bomb in one (its spinning children, until the process count is full) takes nothing
    of the other's CPU quota, process count or memory. The exercises of one grading share its
    uid, as a named student's do."""
    import re
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda _: runner.grade(PKG, only=["ch00_rates", "ch05_idle"],
                                                    jobs=2), range(2)))
    # "uid N; cgroup NAME", or "uid N; rlimits only (no cgroup)" where the host makes none
    whose = [{re.search(r"uid (\d+); (?:cgroup (\S+))?", r.isolation).groups() for r in run}
             for run in runs]
    assert all(len(w) == 1 for w in whose), whose          # one grading: one uid, one cgroup
    (uid_a, cg_a), (uid_b, cg_b) = (next(iter(w)) for w in whose)
    assert uid_a != uid_b and (cg_a is None or cg_a != cg_b), whose
    assert all(r.score == r.max_score for run in runs for r in run)


@pytest.mark.parametrize("cpus, procs, memory", [(1.0, 64, 4 << 30), (0.5, 16, None)])
def test_cgroup_v2_writer_sets_the_student_limits(tmp_path, monkeypatch, cpus, procs, memory):
    """On a cgroup v2 host (a unified tree: ``cgroup.controllers`` at its root) the student's
    cgroup is ``course-grader/u<uid>`` with the cpu, pids and memory controllers enabled on the
    way down and its own ``cpu.max`` (quota and period), ``pids.max`` and ``memory.max``; its
    ``cgroup.procs`` is what the worker joins. This host is v1: a fake cgroupfs stands in."""
    from exercises.grading import budget
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    monkeypatch.setattr(budget, "CG_ROOT", root)
    monkeypatch.setattr(budget.os, "geteuid", lambda: 0)
    name, joins = budget.student_cgroup(230010, cpus, procs, memory)
    d = root / budget.CG_NAME / "u230010"
    assert name == f"{d} (v2)" and joins == [str(d / "cgroup.procs")], (name, joins)
    for parent in (root, root / budget.CG_NAME):
        assert (parent / "cgroup.subtree_control").read_text() == "+cpu +pids +memory"
    assert (d / "cpu.max").read_text() == f"{int(cpus * 100_000)} 100000"
    assert (d / "pids.max").read_text() == str(procs)
    assert (d / "memory.max").read_text() == str(memory) if memory else \
        not (d / "memory.max").exists()


def test_cgroup_v2_writer_that_cannot_write_gives_rlimits_only(tmp_path, monkeypatch):
    """A v2 tree the grader may not write (a container's read-only cgroupfs): no cgroup, so the
    report says "rlimits only", never a cgroup that holds no limit."""
    from exercises.grading import budget
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (root / budget.CG_NAME).write_text("a file where the folder would go")   # mkdir fails
    monkeypatch.setattr(budget, "CG_ROOT", root)
    monkeypatch.setattr(budget.os, "geteuid", lambda: 0)
    assert budget.student_cgroup(230011, 1.0, 64, 1 << 30) == ("", [])


def test_huge_answers_stop_at_the_result_limit(tmp_path):
    """A submission answering 12 MB a call is stopped once its answers pass the session's total
    (128 MiB), and the test's message names the limit; a single answer over 16 MiB is refused at
    once. (Main read 64 MiB frames without a total: the grader grew to gigabytes.)"""
    from exercises.grading.student import Student, SubmissionFailed
    f = tmp_path / "big.py"
    f.write_text("import numpy as np\n\ndef answer(n):\n    return np.zeros(n)\n")
    st = Student({"big.py": f})
    try:
        with pytest.raises(SubmissionFailed, match="result-size limit"):
            for _ in range(12):
                st.module("big.py").answer(1_500_000)
        with pytest.raises(SubmissionFailed, match="result-size limit"):
            st.module("big.py").answer(3_000_000)
    finally:
        st.close()


def test_each_test_gets_a_fresh_sandbox(tmp_path):
    """What the submission keeps in its process during one test is gone in the next (main kept
    one process for all of an exercise's tests)."""
    from exercises.grading.student import Student
    f = tmp_path / "keeps.py"
    f.write_text("SEEN = []\n\ndef remember(x):\n    SEEN.append(x)\n    return list(SEEN)\n")
    st = Student({"keeps.py": f})
    got = []

    def a_test():
        got.append(st.module("keeps.py").remember(len(got)))
    case = runner.Case("t::t", "t", a_test, 1.0, False, False, 10.0, "")
    assert runner.run_case(case, st, 30) == ("passed", "")
    assert runner.run_case(case, st, 30) == ("passed", "")
    assert got == [[0], [1]], got


@pytest.mark.parametrize("body, limits, named", [
    ("    while True:\n        pass\n", {"cpu_s": 1}, "CPU-time limit"),
    ("    return len(bytearray(1 << 30))\n", {"memory_bytes": 256 << 20}, "memory limit"),
    ("    print('x' * (1 << 20) * 3)\n    return 1\n", {"max_output_bytes": 1 << 16},
     "output limit"),
])
def test_a_stopped_run_names_its_limit(tmp_path, body, limits, named):
    """CPU time, memory and output: the outcome names the limit that stopped the run (main's
    gradebook said "ok" for a student stopped by a limit)."""
    (tmp_path / "sub.py").write_text("def main(p):\n" + body)
    out = run_untrusted("sub:main", None, None, {"sub.py": tmp_path / "sub.py"}, timeout_s=30,
                        **limits)
    assert named in out.limit, (out.limit, out.error[-500:], out.returncode)


KEYRING = '''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
NR = {"x86_64": (248, 250), "aarch64": (217, 219)}
def main(p):
    import os
    add_key, keyctl = NR[os.uname().machine]
    ring = libc.syscall(L(keyctl), L(22), L(-1), L(-4))     # KEYCTL_GET_PERSISTENT(me, @u)
    out = {"ring": [ring, ctypes.get_errno()]}
    if p == "put":
        data = b"hidden input 137"
        r = libc.syscall(L(add_key), b"user", b"note", data, ctypes.c_size_t(len(data)),
                         L(ring if ring > 0 else -4))
        out["put"] = [r, ctypes.get_errno()]
    else:
        key = libc.syscall(L(keyctl), L(10), L(ring if ring > 0 else -4), b"user", b"note", L(0))
        buf = ctypes.create_string_buffer(256)
        n = libc.syscall(L(keyctl), L(11), L(key), buf, L(256)) if key > 0 else -1
        out["got"] = buf.raw[:max(0, n)].decode(errors="replace")
    return out
'''


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.uname().machine not in
                    ("x86_64", "aarch64"), reason="the keyring calls' numbers")
@pytest.mark.parametrize("zygote", [None, ("numpy",)])
def test_the_kernel_keyring_carries_nothing_between_runs(tmp_path, zygote):
    """A run that stores a key in its uid's keyrings (the persistent one outlives every process
    of the uid) leaves nothing a later run of the same uid reads: the keyring calls fail (EPERM)
    under the sandbox's seccomp filter, or the report says they were not refused."""
    (tmp_path / "keys.py").write_text(KEYRING)
    files = {"keys.py": tmp_path / "keys.py"}
    put = run_untrusted("keys:main", "put", None, files, timeout_s=60, zygote=zygote)
    got = run_untrusted("keys:main", "get", None, files, timeout_s=60, zygote=zygote)
    assert put.ok and got.ok, (put.error, got.error)
    if not put.isolation.keyring:
        assert "keyring NOT refused" in put.isolation.summary()
        pytest.skip("no seccomp filter here: " + "; ".join(put.isolation.notes))
    assert put.value["put"] == [-1, 1] and put.value["ring"] == [-1, 1], put.value   # EPERM
    assert got.value["got"] == "", got.value
    assert "the kernel keyring refused" in put.isolation.summary()


CGROUP_PROBE = '''
import os
def main(p):
    try:
        return sorted(os.listdir("/sys/fs/cgroup"))
    except OSError as e:
        return "error: " + e.strerror
'''


@as_root
@pytest.mark.parametrize("zygote", [None, ("numpy",)])
def test_the_cgroup_files_are_not_in_view(tmp_path, zygote):
    """/sys/fs/cgroup is an empty tmpfs in a run's view: the student's cgroup outlives its runs,
    and its counters (the peak memory a hidden test drove up) would carry a value to the next."""
    (tmp_path / "cg.py").write_text(CGROUP_PROBE)
    out = run_untrusted("cg:main", None, None, {"cg.py": tmp_path / "cg.py"}, timeout_s=60,
                        zygote=zygote)
    assert out.ok, out.error
    if not out.isolation.pid_namespace:
        pytest.skip("no mount namespace here: " + "; ".join(out.isolation.notes))
    assert out.value in ([], "error: Permission denied"), out.value


GUARDED = '''
import os
import subprocess
import sys
import numpy as np
from fractions import Fraction

def fine(x):
    return float(np.sum(np.arange(x))) + float(Fraction(1, 2))

def imports():
    os.makedirs("pkg_v", exist_ok=True)
    with open("pkg_v/vendored.py", "w") as f:
        f.write("X = 1\\n")
    sys.path.insert(0, os.path.abspath("pkg_v"))
    import vendored
    return vendored.X

def builds():
    return exec(compile("y = 2", "<carried>", "exec"), {})

def evals():
    return eval("1 + 1")

def starts():
    return subprocess.run([sys.executable, "-c", "print(1)"]).returncode
'''


@pytest.mark.parametrize("fn, refused", [
    ("imports", "may not import vendored"), ("builds", "may not execute code it builds"),
    ("evals", "may not execute code it builds"), ("starts", "may not do this")])
def test_a_submission_runs_only_the_code_it_was_imported_with(tmp_path, fn, refused):
    """Once a session's submission modules are imported, nothing more is loaded or run: a module
    it writes and imports (a carried copy of the course's model), code it compiles or evals, a
    program it starts is refused with a message saying so; numpy and the standard library it
    imported work."""
    from exercises.grading.student import Student, SubmissionRaised
    (tmp_path / "guarded.py").write_text(GUARDED)
    st = Student({"guarded.py": tmp_path / "guarded.py"})
    try:
        assert st.module("guarded.py").fine(4) == 6.5
        with pytest.raises(SubmissionRaised, match=refused):
            getattr(st.module("guarded.py"), fn)()
    finally:
        st.close()


def test_a_program_loaded_at_import_is_refused(tmp_path):
    """A module the submission's own import loads beside it (written out and imported at module
    level) fails its calls: only its files, the standard library and numpy are its code."""
    from exercises.grading.student import Student, SubmissionRaised
    (tmp_path / "early.py").write_text(
        "import os, sys\nos.makedirs('v', exist_ok=True)\n"
        "open('v/carried.py', 'w').write('def f():\\n    return 1\\n')\n"
        "sys.path.insert(0, os.path.abspath('v'))\nimport carried\n\n"
        "def answer():\n    return carried.f()\n")
    st = Student({"early.py": tmp_path / "early.py"})
    try:
        with pytest.raises(SubmissionRaised, match="may not import carried"):
            st.module("early.py").answer()
    finally:
        st.close()
