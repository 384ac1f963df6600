"""The course's model of one Hopper SM running attention and GEMM schedules (SimPy).

The public API is what `__all__` names: what notebooks, the exercises and users import
(``from sim import ...``). The rest of the package (the engine, the CTAs, the variants' modules)
is the model's inside and may change.

* predict a kernel on a GPU: `predict` (a `Prediction`) from an `AttentionConfig` or `GemmConfig`
  and a `Hardware` (`H100`, `H200`, `H200_DATASHEET`, `B200`, any of `PRESETS`, or
  ``H100.with_(...)``);
* run one SM and see what happened: `simulate` (a `Run`: its `Trace` and its event log, `EVENTS`),
  with roles you write (each gets a `RoleView`) in place of a schedule's own;
* one step alone: `measure_wgmma`, `measure_softmax`.
"""
from .config import AttentionConfig, GemmConfig
from .hardware import B200, H100, H200, H200_DATASHEET, PRESETS, Hardware
from .predict import Prediction, predict
from .run import EVENTS, Run, event_dict, measure_softmax, measure_wgmma, simulate
from .trace import Interval, Trace
from .views import BarrierView, RingView, RoleView, TurnsView

__all__ = [
    "AttentionConfig", "GemmConfig",
    "Hardware", "H100", "H200", "H200_DATASHEET", "B200", "PRESETS",
    "predict", "Prediction",
    "simulate", "Run", "EVENTS", "event_dict",
    "RoleView", "BarrierView", "RingView", "TurnsView",
    "measure_wgmma", "measure_softmax",
    "Trace", "Interval",
]
