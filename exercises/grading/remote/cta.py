"""The CTA a student's role gets: it looks like `sim.RoleView`, but it holds no model. Each call
goes to the grader, whose model (in the grader's process) does it and answers; a generator call
(``yield from cta.wait(...)``) and an event (``yield cta.qk(w, j)``) are yielded to the grader,
whose model blocks the role until they complete. So the run, its clock and its event log are the
grader's; the role can only ask, in the calls a role has (no ``produce``, no ``wait_turn``).
"""
from .codec import Record, Ref, decode, encode

CHANNEL = None              # set by serve.main: the session's channel to the grader


class GraderError(Exception):
    """The grader refused a call (wrong argument types, a barrier of another CTA, ...)."""


def ask(view, method, *args):
    """One call carried out by the grader for CTA view `view`; its answer, or its refusal."""
    CHANNEL.send({"req": method, "view": view, "args": encode(list(args), _hook)})
    reply = CHANNEL.recv()
    if reply is None:
        raise SystemExit("the grader closed the session")
    if "raise" in reply:
        kind, msg = reply["raise"]
        raise {"TypeError": TypeError, "ValueError": ValueError}.get(kind, GraderError)(msg)
    return decode(reply.get("value"))


def _hook(obj):
    if isinstance(obj, Barrier):
        return {"bar": obj.name}
    if isinstance(obj, Ring):
        return {"ring": obj.name}
    if isinstance(obj, Token):
        return {"tok": [obj.kind, encode(list(obj.args), _hook)]}
    return None


class Token:
    """What a generator call yields: the grader's model runs the step and resumes the role."""

    __slots__ = ("args", "kind")

    def __init__(self, kind, args):
        self.kind, self.args = kind, args


class Barrier:
    """An mbarrier: its `name`, `expect(nbytes)` and `arrive()`."""

    __slots__ = ("_view", "name")

    def __init__(self, view, name):
        self._view, self.name = view, name

    def expect(self, nbytes):
        """mbarrier.arrive.expect_tx: one arrival that announces `nbytes` still to land."""
        ask(self._view, "expect", self, nbytes)

    def arrive(self):
        ask(self._view, "arrive", self)

    def __repr__(self):
        return f"<barrier {self.name}>"


class Ring:
    """A ring of `stages` slots, each with a `full` and an `empty` barrier."""

    __slots__ = ("empty", "full", "name", "stages")

    def __init__(self, view, d):
        self.name, self.stages = d["name"], d["stages"]
        self.full = tuple(Barrier(view, n) for n in d["full"])
        self.empty = tuple(Barrier(view, n) for n in d["empty"])

    def __repr__(self):
        return f"<ring {self.name}, {self.stages} stages>"


class Turns:
    """The consumers' turn barriers (pingpong): `bar[w]` is warpgroup w's, `n` how many."""

    __slots__ = ("bar", "n")

    def __init__(self, view, d):
        self.n = d["n"]
        self.bar = tuple(Barrier(view, n) for n in d["bar"])


class CTA:
    """One attention CTA as a role sees it (the grader's `sim.RoleView`, asked over the pipe).

    Attributes: `cfg` (the prepared config, read-only), `n_blocks`, `el` (bytes per element),
    `producer_name`, `k` and `v` (rings), `q_full` (a barrier), `turns`, `now` (the SM clock).
    Generators (``yield from``): `wait`, `acquire`, `softmax`, `rescale`, `pack`, `epilogue`.
    Events (``yield``): `qk`, `pv`, `delay`. Plain calls: `wg`, `tile`, `tma_copy`, `load_q`,
    `release`.
    """

    __slots__ = ("_view", "cfg", "el", "k", "n_blocks", "producer_name", "q_full", "turns", "v")

    def __init__(self, d):
        self._view = d["view"]
        self.cfg = Record(d["cfg"])
        self.n_blocks, self.el, self.producer_name = d["n_blocks"], d["el"], d["producer_name"]
        self.k, self.v = Ring(self._view, d["k"]), Ring(self._view, d["v"])
        self.q_full = Barrier(self._view, d["q_full"])
        self.turns = Turns(self._view, d["turns"])

    @property
    def now(self):
        return ask(self._view, "now")

    def wg(self, w):
        """The actor name of consumer warpgroup w."""
        return ask(self._view, "wg", w)

    def tile(self, what, j):
        """Trace tag of block j of `what` ("kv", "q", ...)."""
        return ask(self._view, "tile", what, j)

    def delay(self, clk):
        """An event `clk` cycles from now (``yield cta.delay(clk)``)."""
        return ask(self._view, "delay", clk)

    def wait(self, actor, bar, parity):
        """try_wait.parity until the barrier's phase of this parity has completed."""
        yield Token("wait", (actor, bar, parity))

    def tma_copy(self, actor, op, nbytes, bar, tile=None):
        """Issue a TMA copy of `nbytes` that completes on `bar` (after your `bar.expect`)."""
        ask(self._view, "tma_copy", actor, op, nbytes, bar, tile)

    def load_q(self, actor):
        """The CTA's Q tile, expected on and landing at `q_full`."""
        ask(self._view, "load_q", actor)

    def acquire(self, actor, ring, j):
        """Consumer side: wait until block j has landed in its slot."""
        yield Token("acquire", (actor, ring, j))

    def release(self, ring, j):
        """Consumer side: arrive on block j's `empty` barrier."""
        ask(self._view, "release", ring, j)

    def qk(self, w, j):
        """Issue S = Q K_jᵀ; returns the event warpgroup_mma_wait waits on."""
        return ask(self._view, "qk", w, j)

    def pv(self, w, j):
        """Issue O += P_j V_j; returns the event warpgroup_mma_wait waits on."""
        return ask(self._view, "pv", w, j)

    def softmax(self, w, j):
        yield Token("softmax", (w, j))

    def rescale(self, w, j):
        """O *= exp2(m_old - m_new)."""
        yield Token("rescale", (w, j))

    def pack(self, w, j):
        """P to 16 bits for P·V."""
        yield Token("pack", (w, j))

    def epilogue(self, w):
        yield Token("epilogue", (w,))


def build(tag, body):
    """`codec.decode`'s hook on this side: a CTA the grader hands to a role."""
    if tag == "cta":
        return CTA(decode(body))
    return None


__all__ = ["CTA", "GraderError", "Ref", "Token", "build"]
