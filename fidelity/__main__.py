"""`python -m fidelity`: see the package docstring for the commands."""
from __future__ import annotations

import argparse
import sys

from . import __doc__ as USAGE


def cmd_compare(a) -> int:
    from sim import hardware

    from .compare import compare, cycle_rows, cycle_table, table
    hw = hardware.get(a.hardware)
    print(table(compare(hw, everything=a.all)))
    print("\n" + cycle_table(cycle_rows(hw, everything=a.all)))
    return 0


def cmd_story(a) -> int:
    from sim.__main__ import cmd_story as model_story

    from .compare import measured_attention_ladder
    return model_story(a, measured=measured_attention_ladder())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["lanes"]:
        from .lanes import main as lanes
        return lanes(argv[1:])
    if argv[:1] == ["calibrate"]:
        from .calibrate import main as calibrate
        calibrate(argv[1:])
        return 0
    if argv[:1] == ["crossval"]:
        from .crossval import main as crossval
        return crossval(argv[1:])
    if argv[:1] == ["pingpong"]:
        from .pingpong import main as pingpong
        return pingpong(argv[1:])
    if argv[:1] == ["grid"]:
        from .grid import main as grid
        return grid(argv[1:])
    if argv[:1] == ["fa2"]:
        from .fa2 import main as fa2
        return fa2(argv[1:])
    if argv[:1] == ["persistent"]:
        from .persistent import main as persistent
        return persistent(argv[1:])
    if argv[:1] == ["probes"]:
        from .probes import report
        print(report())
        return 0
    parser = argparse.ArgumentParser(prog="python -m fidelity", description=USAGE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd")
    p = sub.add_parser("story", help="the model's story with the measured ladder beside it")
    p.add_argument("--out", default="out/story")
    sub.add_parser("lanes", help="the model's lanes under the committed Proton traces")
    sub.add_parser("calibrate", help="how the fitted constants were chosen")
    sub.add_parser("crossval", help="each kernel family held out of the fits, then predicted")
    sub.add_parser("pingpong", help="where pingpong pays: the model's gain over ws, mapped, and why")
    sub.add_parser("grid", help="fa3 across head dim and sequence length, measured vs the model")
    sub.add_parser("fa2", help="the model's fa2 (mma.sync, from its own costs) vs SDPA-flash")
    sub.add_parser("persistent", help="persistent fa3 against plain: measured vs the model")
    sub.add_parser("probes", help="the model's numbers for the queued device probes (and any "
                                  "measurement of them committed)")
    parser.add_argument("--hardware", default="h200")
    parser.add_argument("--all", action="store_true", help="every measured shape, not the headlines")
    a = parser.parse_args(argv)
    try:
        return {"story": cmd_story, None: cmd_compare}[a.cmd](a)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
