"""exercises/grading/zygote.py: each run forked from a warm process, and still a fresh one.

A warm zygote must change only how fast a run starts: every test of a submission is a process in
which no earlier test's code ran, under its student's uid, with nothing left of an earlier run
(a module global, a patched module the zygote imported, a file, /dev/shm, a process serving
answers on a socket). Each test here fails against a zygote that serves runs from one process,
or that does not kill a run's processes before the next (see the docstrings).
"""
from __future__ import annotations

import os
import tempfile
import textwrap
from pathlib import Path

import pytest

from exercises.grading import zygote
from exercises.grading.sandbox import run_untrusted
from exercises.grading.student import PRELOAD, Student

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop and the namespaces need "
                             "root (CI and Gradescope run as root)")

STASH = '''
import os, socket, sys, time
import numpy

SEEN = []
ADDRESS = ADDRESS_HERE
RUN = os.urandom(8).hex()


def _daemon():
    """Forked at import (a submission may not start processes once it is imported): a process
    that would answer the next test on an abstract socket, naming the run that started it (a
    token: in a pid namespace every run may have the same pid)."""
    if os.fork() == 0:
        os.setsid()
        try:
            srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            srv.bind(ADDRESS)
            srv.listen(4)
            while True:
                conn, _ = srv.accept()
                conn.sendall(RUN.encode())
                conn.close()
        finally:
            os._exit(0)
    time.sleep(0.3)                        # the daemon is listening before the import ends


_daemon()


def remember(test, address):
    """Test `test`: stash what the next test would need everywhere a process can."""
    found = {"seen": list(SEEN), "numpy": getattr(numpy, "STASHED", None),
             "files": sorted(f for f in os.listdir(".") if f.startswith("left")),
             "shm": sorted(os.listdir("/dev/shm")), "uid": os.getuid(), "socket": None}
    try:                                   # a classmate-free channel: an abstract socket
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(address)
            run = s.recv(100).decode()
            if run != RUN:                 # a daemon of an earlier run, still answering
                found["socket"] = "answer from run " + run
    except OSError:
        pass
    SEEN.append(test)
    numpy.STASHED = test                   # a module the zygote imported, patched here
    open("left-by-%d" % test, "w").write("x")
    open("/dev/shm/left-by-%d" % test, "w").write("x")
    return found
'''


def _student(tmp_path: Path, name: str, address: str, uid: int | None = None) -> Student:
    d = tmp_path / name
    d.mkdir(mode=0o755)
    (d / "stash.py").write_text(STASH.replace("ADDRESS_HERE", repr(address)))
    limits = {"uid": uid, "gid": uid} if uid is not None else {}
    return Student({"stash.py": d / "stash.py"}, identity=name, limits=limits)


def test_each_test_starts_from_a_fresh_process(tmp_path):
    """Test 2 sees nothing test 1 left: not its module global, not its patch of numpy (which the
    zygote imported before both), not its files, not /dev/shm, and no process of test 1 is
    left to answer on a socket. Fails against a zygote that runs tests in one process (SEEN,
    numpy.STASHED), or that does not kill a run's processes (the socket answers)."""
    address = "\0grader-zygote-test-%d" % os.getpid()
    st = _student(tmp_path, "alice", address)
    try:
        first = st.module("stash.py").remember(1, address)
        st.close()                                     # the runner closes after every test
        assert st.isolation.forked, "the run was not forked by a zygote"
        second = st.module("stash.py").remember(2, address)
    finally:
        st.close()
    assert first["seen"] == second["seen"] == [], second
    assert first["numpy"] is second["numpy"] is None, second
    assert second["files"] == [], second
    if st.isolation.pid_namespace:
        assert second["shm"] == [], second
    assert second["socket"] is None, f"test 1's daemon answered test 2: {second['socket']}"


@as_root
def test_one_zygote_serves_students_under_their_own_uids(tmp_path):
    """Two students' runs from one zygote (a grade-class worker grades many students): each run
    under its student's uid, neither sees what the other's run stashed."""
    address = "\0grader-zygote-test-uids-%d" % os.getpid()
    a, b = (_student(tmp_path, "alice", address, 230001),
            _student(tmp_path, "bob", address, 230002))
    try:
        got_a = a.module("stash.py").remember(1, address)
        a.close()
        if a.isolation.uid is None:             # the uid could not be dropped here: say why
            pytest.skip("; ".join(a.isolation.notes))
        pids = {z.proc.pid for zs in zygote._POOL.values() for z in zs}
        got_b = b.module("stash.py").remember(2, address)
        b.close()
        assert {z.proc.pid for zs in zygote._POOL.values() for z in zs} == pids, \
            "the second student's run was not served by the same zygote"
    finally:
        a.close()
        b.close()
    assert (got_a["uid"], got_b["uid"]) == (230001, 230002)
    assert got_b["seen"] == [] and got_b["numpy"] is None and got_b["socket"] is None, got_b


@as_root
def test_a_run_cannot_stop_or_change_the_zygote(tmp_path):
    """The zygote is root and the run is not: the run cannot signal it (EPERM), and the next run
    is still served by it."""
    sub = tmp_path / "kill.py"
    sub.write_text(textwrap.dedent("""
        import os, signal
        def main(p):
            try:
                os.kill(os.getppid(), signal.SIGKILL)
                return "killed it"
            except PermissionError:
                return "refused"
    """))
    d = Path(tempfile.mkdtemp(prefix="zygote-test-"))
    os.chmod(d, 0o755)
    try:
        outs = [run_untrusted("kill:main", None, [d], {"kill.py": sub}, timeout_s=60,
                              zygote=PRELOAD, uid=230003, gid=230003) for _ in range(2)]
    finally:
        os.rmdir(d)
    if outs[0].isolation.uid is None:           # the run is root too: nothing to refuse it
        pytest.skip("; ".join(outs[0].isolation.notes))
    assert [o.value for o in outs] == ["refused", "refused"], [o.error for o in outs]
    assert all(o.isolation.forked for o in outs)


def test_a_run_of_a_broken_submission_leaves_the_zygote_serving(tmp_path):
    """A run that exits, crashes or hangs past its time ends alone: the next run of the same
    view is served (a zygote that died with its run would fail the second call)."""
    sub = tmp_path / "bad.py"
    sub.write_text("import os, time\ndef main(p):\n    if p == 'exit':\n        os._exit(3)\n"
                   "    if p == 'hang':\n        time.sleep(60)\n    return p\n")
    d = Path(tempfile.mkdtemp(prefix="zygote-test-"))
    os.chmod(d, 0o755)
    try:
        run = lambda p, t=30: run_untrusted("bad:main", p, [d], {"bad.py": sub}, timeout_s=t,
                                            zygote=PRELOAD)
        exited, hung, fine = run("exit"), run("hang", 2), run("fine")
    finally:
        os.rmdir(d)
    assert not exited.ok and exited.returncode == 3, exited
    assert hung.timed_out, hung
    assert fine.ok and fine.value == "fine", fine.error


def test_a_zygote_that_does_not_start_leaves_the_run_to_its_own_interpreter(tmp_path,
                                                                           monkeypatch):
    """A warm process that cannot start costs only the warm start: the run starts its own
    interpreter, as without a zygote, and its isolation notes say so."""
    def broken(*args, **kwargs):
        raise zygote.ZygoteFailed("it did not start")
    monkeypatch.setattr(zygote, "Zygote", broken)
    sub = tmp_path / "fine.py"
    sub.write_text("def main(p):\n    return p + 1\n")
    out = run_untrusted("fine:main", 41, None, {"fine.py": sub}, timeout_s=30,
                        zygote=("numpy", "a view no other test has"))
    assert out.ok and out.value == 42, out.error
    assert not out.isolation.forked
    assert any("no warm zygote (it did not start)" in n for n in out.isolation.notes), \
        out.isolation.notes


def test_a_pool_of_graders_leaves_no_zygote_folders():
    """`grade --jobs N` grades in a pool of forked processes, each with its own zygotes: when
    the pool ends, their zygotes end and their folders go (a folder whose owner is alive belongs
    to a process still grading)."""
    from exercises.grading import runner

    def dead_owners() -> set[Path]:
        found = set()
        for d in Path(tempfile.gettempdir()).glob(zygote.PREFIX + "*"):
            if not Path(f"/proc/{d.name[len(zygote.PREFIX):].split('-')[0]}").exists():
                found.add(d)
        return found
    before = dead_owners()
    results = runner.grade(runner.PACKAGE, only=["ch00_rates", "ch05_idle"], jobs=2,
                           identity="pool")
    assert [r.score for r in results] == [r.max_score for r in results], [
        (t.name, t.message[-600:]) for r in results for t in r.tests if t.outcome == "failed"]
    assert dead_owners() - before == set()
