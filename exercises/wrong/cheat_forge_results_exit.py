# exercise: ch00_rates
# file: rates.py
# loses: all
# bug: computes nothing: writes "every test passed" Gradescope JSON to every report path it can
#      think of (paths in its environment, /autograder/results/results.json, results.json in its
#      cwd's parents, the `--gradescope FILE` of any process in /proc), then `os._exit(0)`. The
#      verdict is the grader's: each call ends the session, the test fails, and the grader writes
#      its own report after the sandbox is gone (the sandbox can neither see nor write it).
# ruff: noqa  (known-wrong on purpose)
"""Chapter 00 — what one step costs, from the rates in ``sim/hardware.py``."""
import json
import os

FORGED = {"score": 7.0, "output": "All tests passed",
          "tests": [{"name": n, "score": 2, "max_score": 2, "status": "passed"}
                    for n in ("test_wgmma_fp16", "test_softmax", "test_softmax_masked",
                              "test_wgmma_fp8_random", "test_other_hardware")]}


def _targets():
    out = ["/autograder/results/results.json"]
    for v in os.environ.values():
        if v.endswith(".json") or "result" in v.lower():
            out.append(v)
    d = os.getcwd()
    while d != os.path.dirname(d):
        out.append(os.path.join(d, "results.json"))
        d = os.path.dirname(d)
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


def _forge_and_exit():
    for path in _targets():
        try:
            with open(path, "w") as f:
                json.dump(FORGED, f)
            print("PASSED", path)
        except OSError:
            pass
    print(json.dumps({"passed": True, "score": 7}), flush=True)
    os._exit(0)


def wgmma_group_clk(hw, rows, n, k, dtype="fp16", a_from_smem=True):
    _forge_and_exit()


def softmax_clk(hw, rows, block_n, masked=False):
    _forge_and_exit()
