"""exercises/grading/sandbox.py: untrusted code in its own process, results over a pipe."""
from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from exercises.grading.sandbox import GRADER_ROOT, Refused, run_untrusted

ROOT = os.geteuid() == 0


def run(tmp_path, source, payload=None, **kw):
    sub = tmp_path / "sub.py"
    sub.write_text(textwrap.dedent(source))
    kw.setdefault("timeout_s", 20)
    return run_untrusted("sub:main", payload, kw.pop("visible", None), {"sub.py": sub}, **kw)


@pytest.fixture
def shared_dir():
    """A world-writable dir outside pytest's 0700 tmp (so the dropped uid can write there)."""
    d = Path(tempfile.mkdtemp(prefix="sbx-shared-"))
    os.chmod(d, 0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_payload_in_result_out(tmp_path):
    vis = tmp_path / "release"
    (vis / "model").mkdir(parents=True)
    (vis / "model" / "__init__.py").write_text("def twice(x):\n    return 2 * x\n")
    out = run(tmp_path, """
        import os, model
        def main(p):
            print("hi")
            return {"sum": sum(p["xs"]), "twice": model.twice(p["k"]), "env": dict(os.environ)}
    """, {"xs": [1, 2, 3], "k": 21}, visible=vis)
    assert out.ok and out.error == "", out
    assert out.value["sum"] == 6 and out.value["twice"] == 42
    assert out.output == "hi\n" and not out.output_truncated and out.returncode == 0
    env = out.value["env"]
    assert not set(env) & {"PYTEST_CURRENT_TEST", "VIRTUAL_ENV", "PYTHONPATH", "USER"}, env
    assert env["HOME"].endswith("/work") and env["TMPDIR"].startswith(env["HOME"])
    assert out.isolation.subreaper
    if ROOT:
        assert out.isolation.uid not in (None, 0) and out.isolation.gid not in (None, 0)


@pytest.mark.parametrize("namespaces", [True, False], ids=["pidns-if-any", "subreaper-only"])
def test_double_forked_setsid_process_is_killed(tmp_path, shared_dir, namespaces):
    late = shared_dir / "late"
    out = run(tmp_path, """
        import os, time
        def main(p):
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    with open(p["dir"] + "/pid", "w") as f:
                        f.write(str(os.getpid()))
                    time.sleep(1.5)
                    with open(p["dir"] + "/late", "w") as f:
                        f.write("rewritten after the grader finished")
                os._exit(0)
            time.sleep(0.3)
            return "done"
    """, {"dir": str(shared_dir)}, hide=[], namespaces=namespaces)
    assert out.value == "done", out
    assert out.killed >= 1, out
    if not namespaces or not out.isolation.pid_namespace:  # a host pid: it must be gone now
        pid = int((shared_dir / "pid").read_text())
        assert not Path(f"/proc/{pid}").exists() or \
            Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    time.sleep(2.0)
    assert not late.exists()


def test_forged_verdicts_do_not_change_the_result(tmp_path, shared_dir, monkeypatch):
    report = shared_dir / "report.jsonl"
    report.write_text("")
    os.chmod(report, 0o666)
    monkeypatch.setenv("GRADER_SECRET", "s3cret")
    src = """
        import os, sys
        def main(p):
            line = '{"event": "result", "outcome": "passed", "nodeid": "x"}\\n'
            print("passed"); print("PASSED all tests", file=sys.stderr)
            for name in ("results.json", "report.jsonl", "verdict"):
                with open(name, "w") as f:
                    f.write(line)
            path = os.environ.get("EXERCISES_REPORT")
            if path:
                with open(path, "a") as f:
                    f.write(line)
            if p == "raise":
                raise AssertionError("wrong answer")
            return {"answer": 41, "secret": os.environ.get("GRADER_SECRET")}
    """
    out = run(tmp_path, src, "return", hide=[], env={"EXERCISES_REPORT": str(report)})
    assert out.value == {"answer": 41, "secret": None}, out
    assert "passed" in out.output           # it wrote, and nothing came of it
    out = run(tmp_path, src, "raise", hide=[], env={"EXERCISES_REPORT": str(report)})
    assert not out.ok and out.value is None and "AssertionError: wrong answer" in out.error


def test_grader_tree_is_out_of_reach(tmp_path):
    solution = GRADER_ROOT / "exercises" / "grading" / "runner.py"
    out = run(tmp_path, f"""
        import importlib, sys
        def main(p):
            got = {{}}
            for mod in ("exercises", "exercises.grading.runner", "sim", "tests"):
                try:
                    importlib.import_module(mod)
                    got[mod] = "imported"
                except ImportError:
                    got[mod] = "no"
            try:
                got["read"] = open({str(solution)!r}).read()[:20]
            except OSError as e:
                got["read"] = "no"
            got["path"] = [p for p in sys.path if p.startswith({str(GRADER_ROOT)!r})
                           and "site-packages" not in p and not p.endswith("python3.11")]
            return got
    """)
    assert out.value["exercises"] == out.value["exercises.grading.runner"] == "no", out
    assert out.value["sim"] == out.value["tests"] == "no"
    assert out.value["path"] == []
    if out.isolation.masked:
        assert any(GRADER_ROOT == Path(m) or Path(m) in GRADER_ROOT.parents
                   for m in out.isolation.masked), out.isolation.masked
        assert out.value["read"] == "no"


@pytest.mark.skipif(not ROOT, reason="the mount namespace needs root")
@pytest.mark.parametrize("under", ["/usr/src", "/usr/local/src", "/usr/local"])
def test_a_checkout_under_usr_is_out_of_view(tmp_path, under):
    """/usr and /usr/local are allow-lists too (their bin, sbin, lib*, libexec, include and share,
    and what the interpreter needs): a checkout under /usr/src, /usr/local/src or
    /usr/local/<anything else>, readable by everyone, is not in a session's view."""
    made = [] if os.path.isdir(under) else [under]
    if made:
        os.makedirs(under)
    planted = Path(tempfile.mkdtemp(prefix="course-checkout-", dir=under))
    try:
        os.chmod(planted, 0o755)
        (planted / "solution.py").write_text("ANSWER = 42\n")
        os.chmod(planted / "solution.py", 0o644)
        out = run(tmp_path, f"""
            import os
            def main(p):
                got = {{}}
                try:
                    got["read"] = open({str(planted / "solution.py")!r}).read()
                except OSError as e:
                    got["read"] = type(e).__name__
                try:
                    got["listed"] = {planted.name!r} in os.listdir({under!r})
                except OSError as e:
                    got["listed"] = type(e).__name__
                got["usr"] = sorted(os.listdir("/usr"))
                got["bin"] = os.path.exists("/usr/bin") and bool(os.listdir("/usr/bin"))
                return got
        """)
        if not out.isolation.masked:
            pytest.skip("no mount namespace here: " + "; ".join(out.isolation.notes))
        assert out.ok, out.error
        assert out.value["read"] in ("FileNotFoundError", "PermissionError"), out.value
        assert out.value["listed"] is not True, out.value
        assert "src" not in out.value["usr"] and out.value["bin"], out.value
    finally:
        shutil.rmtree(planted, ignore_errors=True)
        for d in made:
            os.rmdir(d)


@pytest.mark.skipif(not os.path.isdir("/usr/local/lib"), reason="no /usr/local/lib here")
def test_usr_stays_an_allow_list_whatever_the_interpreters_prefix():
    """The plan covers /usr and /usr/local and binds back what an interpreter reads (bin, lib,
    ...) and the needed paths' next names, also where the interpreter's prefix is /usr/local (the
    python docker image: python and libpython in /usr/local/bin and /usr/local/lib) or /usr (a
    system python under a venv): a prefix there is never needed whole."""
    from exercises.grading.sandbox import _mask_plan
    top = "/tmp/sbx-top"
    layouts = {
        "docker": ["/usr/local/bin", "/usr/local", "/usr/local/lib/python3.11",
                   "/usr/local/lib/python3.11/lib-dynload",
                   "/usr/local/lib/python3.11/site-packages", top],
        "system python, venv": ["/usr/bin", "/opt/venv", "/usr", "/usr/lib/python3.10",
                                "/opt/venv/lib/python3.10/site-packages", top],
        "venv under /usr/local": ["/usr/local/bin", "/usr/local/course-venv", "/usr/local",
                                  "/usr/local/lib/python3.11",
                                  "/usr/local/course-venv/lib/python3.11/site-packages", top],
    }
    for name, needed in layouts.items():
        plan = {m[0]: m[1] for m in _mask_plan(needed, [])}
        assert "/usr" in plan and "/usr/local" in plan, (name, plan)
        assert {"bin", "lib", "local"} <= set(plan["/usr"]), (name, plan["/usr"])
        assert {"bin", "lib"} <= set(plan["/usr/local"]), (name, plan["/usr/local"])
        assert not {"src", "games", "etc"} & set(plan["/usr"] + plan["/usr/local"]), (name, plan)
        assert ("course-venv" in plan["/usr/local"]) == (name == "venv under /usr/local")


@pytest.mark.skipif(not ROOT, reason="makes a directory under /usr/local")
def test_the_dynamic_linkers_directories_stay_in_view(tmp_path, monkeypatch):
    """A library directory the dynamic linker's configuration names under /usr/local (a GPU
    image keeps libcuda.so.1 in /usr/local/nvidia/lib64; here a name of no list) is bound back,
    what lies beside it is not."""
    from exercises.grading import sandbox
    name = f"course-driver-{os.getpid()}"
    lib = Path("/usr/local") / name / "lib64"
    lib.mkdir(parents=True)
    try:
        (tmp_path / "ld.so.conf.d").mkdir()
        (tmp_path / "ld.so.conf").write_text(f"include {tmp_path}/ld.so.conf.d/*.conf\n")
        (tmp_path / "ld.so.conf.d" / "driver.conf").write_text(f"# the driver\n{lib}\n")
        plan = {m[0]: m[1] for m in sandbox._mask_plan(["/usr/bin"], [])}
        assert name not in plan["/usr/local"], plan["/usr/local"]
        monkeypatch.setattr(sandbox, "LINKER_CONF", str(tmp_path / "ld.so.conf"))
        assert str(lib) in sandbox._linker_dirs()
        plan = {m[0]: m[1] for m in sandbox._mask_plan(["/usr/bin"], [])}
        assert name in plan["/usr/local"] and "src" not in plan["/usr/local"], plan["/usr/local"]
    finally:
        shutil.rmtree(lib.parent)


@pytest.mark.skipif(not ROOT, reason="the uid drop needs root")
def test_dropped_uid_cannot_read_a_0700_dir(tmp_path):
    secret_dir = Path(tempfile.mkdtemp(prefix="sbx-grader-"))   # 0700, owned by root
    try:
        (secret_dir / "solution.py").write_text("ANSWER = 42\n")
        os.chmod(secret_dir / "solution.py", 0o644)
        out = run(tmp_path, f"""
            def main(p):
                try:
                    return open({str(secret_dir / "solution.py")!r}).read()
                except PermissionError:
                    return "denied"
        """, hide=[])                      # no masks but the interpreter's way (/root here)
        if out.isolation.uid is None:
            pytest.skip("; ".join(out.isolation.notes))
        assert out.value == "denied", out
    finally:
        shutil.rmtree(secret_dir)


def test_bad_submission_files_are_refused(tmp_path):
    good = tmp_path / "good.py"
    good.write_text("def main(p):\n    return 1\n")
    link = tmp_path / "link.py"
    link.symlink_to(GRADER_ROOT / "exercises" / "grading" / "runner.py")
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    cases = {"sub.py": (link, "symbolic link"), "f.py": (fifo, "fifo"),
             "../sub.py": (good, "name"), "a/b.py": (good, "name"), "..": (good, "name"),
             "d.py": (tmp_path, "directory")}
    for name, (src, why) in cases.items():
        with pytest.raises(Refused, match=why):
            run_untrusted("good:main", None, None, {name: src}, timeout_s=5)


def test_output_over_the_cap_is_cut_and_flagged(tmp_path):
    out = run(tmp_path, """
        import sys
        def main(p):
            for _ in range(200):
                sys.stdout.write("x" * 10000 + "\\n")
            return "still here"
    """, max_output_bytes=1000)
    assert out.value == "still here" and out.output_truncated and len(out.output) == 1000


def test_infinite_loop_times_out(tmp_path):
    t0 = time.monotonic()
    out = run(tmp_path, """
        def main(p):
            while True:
                pass
    """, timeout_s=2)
    assert out.timed_out and not out.ok and "timed out" in out.error
    assert time.monotonic() - t0 < 15


def test_memory_hog_is_stopped(tmp_path):
    out = run(tmp_path, """
        def main(p):
            hog = []
            while True:
                hog.append(bytearray(64 << 20))
    """, memory_bytes=512 << 20)
    assert not out.ok and "MemoryError" in out.error, out


@pytest.mark.parametrize("how,why", [
    ("garbage", "malformed"), ("huge-header", "too large"), ("huge-value", "too large"),
    ("not-a-message", "malformed"), ("not-json-data", "not JSON data"), ("exit", "no result")])
def test_bad_results_are_reported_not_trusted(tmp_path, how, why):
    out = run(tmp_path, """
        import os, struct
        def main(how):
            if how == "garbage":
                for fd in range(3, 64):
                    try:
                        os.write(fd, b"passed")
                    except OSError:
                        pass
                os._exit(0)
            if how in ("huge-header", "not-a-message"):
                body = b"[1, 2]"
                n = 1 << 40 if how == "huge-header" else len(body)
                for fd in range(3, 64):
                    try:
                        os.fstat(fd)
                        os.write(fd, struct.pack(">Q", n) + body)
                    except OSError:
                        pass
                os._exit(0)
            if how == "huge-value":
                return "x" * 100000
            if how == "not-json-data":
                return {1, 2}
            os._exit(3)
    """, how, max_result_bytes=10000)
    assert not out.has_value and out.value is None, out
    assert why in out.error, out.error


def test_a_kill_the_grader_asks_for_is_not_the_run_running_out_of_time():
    """A failed test's session is closed with a kill (`Session.close(kill=True)`), waiting 0.1 s
    for the reaper: on a loaded host the reaper may take longer to carry it out, and that is no
    limit of the submission's. Its outcome names none; a stub scored 0/30 in grade-class with
    "stopped by the wall-clock limit" as its status on such a host."""
    import subprocess

    from exercises.grading import runner
    st = runner.student_for("ch00_rates", runner.PACKAGE / "ch00_rates")
    session = st._live()
    real = session._c.proc.wait
    slow = [True]

    def loaded_host_wait(timeout=None):
        if slow.pop() if slow else False:          # the first wait, of 0.1 s, sees it still up
            time.sleep(timeout)
            raise subprocess.TimeoutExpired("reaper", timeout)
        return real(timeout=timeout)
    session._c.proc.wait = loaded_host_wait
    out = session.close(kill=True)
    st._session = None
    assert not slow, "the close did not wait on the reaper"
    assert not out.timed_out and out.measured_limit == "", (out.timed_out, out.measured_limit)
