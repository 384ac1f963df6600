"""The SM's moving parts as SimPy objects: functional units and mbarriers.

A *unit* (tensor core, SFU, FMA pipe, TMA copy engine) serves one piece of work at a time, in the
order the work arrived, and records every busy interval in the `Trace`. Work that two warpgroups
issue at the same moment interleaves piece by piece, as instructions from two warps do in a warp
scheduler; work issued earlier is served first, as a queue of wgmmas is.

An `MBarrier` behaves like Hopper's: an arrival count and a transaction-byte count per phase; the
phase completes when both reach zero; `wait(parity)` passes once the phase of that parity has
completed — the same `try_wait.parity` the kernels spin on, with the same trap (a waiter two phases
behind passes too). A `Ring` is `stages` slots, each with a `full` and an `empty` barrier.
"""
from __future__ import annotations

from collections import deque

import simpy

from .trace import Trace


class Fifo:
    """One holder at a time, served in the order asked: `simpy.Resource(capacity=1)`'s protocol
    with its events scheduled in the same order (a request finds the unit free: granted at once;
    a release with others waiting: an event that grants the next), so every simulation's event
    order, and so its trace, is the same to the last bit. It keeps no request objects, and a
    release with no one waiting schedules nothing: Resource's bookkeeping was a fifth of the
    model's time, and these are its innermost loop (one request per piece of work)."""

    def __init__(self, env: simpy.Environment):
        self.env, self.held, self._queue = env, False, deque()

    def request(self) -> simpy.Event:
        ev = simpy.Event(self.env)
        self._queue.append(ev)
        self._grant()
        return ev

    def release(self) -> None:
        self.held = False
        if self._queue:
            ev = simpy.Event(self.env)
            ev.callbacks.append(self._grant)
            ev.succeed()

    def _grant(self, _=None) -> None:
        if not self.held and self._queue:
            self.held = True
            self._queue.popleft().succeed()


class Unit:
    """One functional unit of the SM, busy with one piece of work at a time (FIFO)."""

    def __init__(self, env: simpy.Environment, name: str, trace: Trace):
        self.env, self.name, self.trace = env, name, trace
        self._res = Fifo(env)

    def run(self, actor: str, op: str, clk: float, pieces: int = 1, tile=None, work: float | None = None,
            stretch=None, gate=None):
        """Occupy the unit for `clk` cycles in `pieces` equal pieces (re-queued between pieces, so
        concurrent users share the unit round-robin). `work` is the useful part of `clk` (the rest
        is overhead, e.g. operand fetch); it defaults to all of it. `stretch()`, if given, is read
        as each piece starts: the factor its cycles take then (the work stays the same).
        `gate()`, if given, is a generator each piece passes first (the warps' issue slot)."""
        work = clk if work is None else work
        for _ in range(pieces):
            if gate is not None:
                yield from gate()
            yield self._res.request()
            start = self.env.now
            yield self.env.timeout(clk / pieces * (stretch() if stretch else 1.0))
            self.trace.busy(actor, self.name, op, start, self.env.now, tile, work / pieces)
            self._res.release()


class IssueSlot:
    """The SM sub-partitions' warp schedulers: each issues one instruction a clock to one of the
    warps resident on it. A warpgroup has one warp on each of the four, and a warpgroup's warps do
    alike work, so the four behave alike and one object stands for them.

    A warp that issues back to back (a stream of independent FMULs or F2FPs) wins the scheduler
    every cycle it is ready — in Nsight Compute's samples of fa3 such a stream is never "not
    selected" — so `hold` keeps the slot for the stream's whole length; other instructions
    issue only when no stream holds it (`take`). The wgmma issue does not ask: its stalls in
    the same samples are the queue's ("wait", "mio"), hardly "not selected". `on=False` (every
    preset: the mechanism is a what-if, results/lab-notebook.md says why) passes each request
    at once."""

    def __init__(self, env: simpy.Environment, trace: Trace, on: bool = True):
        self.env, self.trace, self.on = env, trace, on
        self._res = Fifo(env)

    def take(self, actor: str, n: int = 1):
        """`n` instructions of `actor` issue, one a clock, once no stream holds the slot."""
        if self.on:
            yield from self.hold(actor, self._clocks(n))

    def _clocks(self, n: int):
        yield self.env.timeout(n)

    def hold(self, actor: str, body):
        """Run `body` (a generator: the stream's work on its pipe) holding the slot throughout."""
        if not self.on:
            return (yield from body)
        t0 = self.env.now
        yield self._res.request()
        if self.env.now > t0:
            self.trace.wait(actor, "issue slot", t0, self.env.now)
        result = yield from body
        self._res.release()
        return result


class TensorCore:
    """The SM's tensor cores: the warpgroups issue wgmmas into one queue; the pipe serves the
    warpgroups that have work queued in turn, one instruction each.

    `issue` is wgmma.mma_async for a whole group: it returns at once with the event that fires
    `latency` after the group's last instruction (what `warpgroup_mma_wait` waits for), and the
    warpgroup's instructions enter the queue one by one behind its earlier ones. Each costs the
    issuing warpgroup `issue_clk` (two warpgroups issue side by side), and none enters while
    `depth` instructions of any warpgroup are queued or running: the warpgroup
    gets its next instruction back (`issued`) only once the pipe has taken its last wgmma — so a
    softmax written after two groups starts when the second is in, not when the first is done.
    A group alone runs back to back. Two groups in flight at once share the pipe instruction by
    instruction, so *both* finish late — the collision that pingpong's turns avoid (FA3 §3.1).
    """

    def __init__(self, env: simpy.Environment, trace: Trace, latency: float, name: str = "tensor",
                 depth: int | None = None):
        if depth is not None and depth < 1:
            raise ValueError(f"tensor core: the wgmma queue holds >= 1 instruction, got {depth}")
        self.env, self.trace, self.latency, self.name, self.depth = env, trace, latency, name, depth
        self._queues: dict[str, deque] = {}
        self._order: deque[str] = deque()           # actors with queued work, in serving order
        self._wake = env.event()
        self._in_flight = 0                         # entered the queue, not yet finished
        self._slot = env.event()                    # fires when an instruction finishes
        self._issuing: dict[str, simpy.events.Event] = {}
        self.busy = False                           # an instruction is executing
        env.process(self._serve())

    def issue(self, actor: str, op: str, count: int, clk: float, work: float, tile=None,
              issue_clk: float = 0.0, mma_sync: bool = False):
        """Queue `count` instructions of `clk` cycles each (`work` of them math), each costing
        the issuer `issue_clk`. `mma_sync` (FA2's warp-synchronous path) bypasses wgmma's queue."""
        done = self.env.event()
        group = {"left": count, "done": done}
        items = [(op, clk, work, tile, group)] * count
        if mma_sync or (self.depth is None and not issue_clk):
            self._enter(actor, items)               # an unbounded queue takes the group at once
        else:
            after = self._issuing.get(actor)
            self._issuing[actor] = self.env.process(self._issue(actor, items, issue_clk, after))
        return done

    def issued(self, actor: str):
        """The event the issuing warpgroup's next instruction waits for: its last wgmma taken."""
        ev = self._issuing.get(actor)
        if ev is None:
            ev = self.env.event()
            ev.succeed()
        return ev

    def _issue(self, actor, items, issue_clk, after):
        if after is not None:
            yield after                             # a warpgroup's wgmmas enter in program order
        t0 = self.env.now
        for item in items:
            while self.depth is not None and self._in_flight >= self.depth:
                yield self._slot
            self._in_flight += 1                    # its place in the queue, held while it issues
            yield self.env.timeout(issue_clk)
            self._enter(actor, [item], counted=True)
        if self.env.now > t0:
            self.trace.wait(actor, "wgmma issue", t0, self.env.now)

    def _enter(self, actor, items, counted=False):
        if not counted:
            self._in_flight += len(items)
        q = self._queues.setdefault(actor, deque())
        if not q and actor not in self._order:
            self._order.append(actor)
        q.extend(items)
        if not self._wake.triggered:
            self._wake.succeed()

    def _serve(self):
        while True:
            if not self._order:
                self._wake = self.env.event()
                yield self._wake
                continue
            actor = self._order.popleft()
            q = self._queues[actor]
            op, clk, work, tile, group = q.popleft()
            if q:
                self._order.append(actor)           # back of the line: round-robin
            start = self.env.now
            self.busy = True
            yield self.env.timeout(clk)
            self.busy = bool(self._order)           # the next instruction starts at once
            self.trace.busy(actor, self.name, op, start, self.env.now, tile, work)
            self._in_flight -= 1
            slot, self._slot = self._slot, self.env.event()
            if slot.callbacks:                      # an issuer waits for the room (none: no event)
                slot.succeed()
            group["left"] -= 1
            if group["left"] == 0:
                self.env.timeout(self.latency).callbacks.append(
                    lambda _, d=group["done"]: d.succeed())


class MBarrier:
    """Hopper's mbarrier: arrival count + expected transaction bytes, phase parity.

    `on_event`, if set, is called with a plain tuple for each expect, arrive, complete_tx and
    completed phase (the list is `sim.run.EVENTS`); it only observes."""

    on_event = None

    def __init__(self, env: simpy.Environment, name: str, count: int, wake_clk: float,
                 probe_clk: float = 0.0):
        if count < 1:
            raise ValueError(f"mbarrier {name}: arrival count must be >= 1, got {count}")
        self.env, self.name, self.count, self.wake_clk = env, name, count, wake_clk
        self.probe_clk = probe_clk
        self.completed = 0          # phases completed so far; current phase parity = completed % 2
        self._pending = count
        self._tx = 0
        self._phase_done = env.event()

    def expect(self, nbytes: int) -> None:
        """mbarrier.arrive.expect_tx: one arrival that also announces `nbytes` still to land."""
        if self.on_event is not None:
            self.on_event(("expect", self.env.now, self.name, nbytes))
        self._tx += nbytes
        self.arrive()

    def complete_tx(self, nbytes: int) -> None:
        """The copy engine reports `nbytes` landed (complete_tx)."""
        if self.on_event is not None:
            self.on_event(("complete_tx", self.env.now, self.name, nbytes))
        self._tx -= nbytes
        if self._tx < 0:
            raise RuntimeError(f"mbarrier {self.name}: more bytes landed than were expected")
        self._maybe_flip()

    def arrive(self) -> None:
        if self.on_event is not None:
            self.on_event(("arrive", self.env.now, self.name))
        if self._pending == 0:
            raise RuntimeError(f"mbarrier {self.name}: arrival past the expected count {self.count}")
        self._pending -= 1
        self._maybe_flip()

    def _maybe_flip(self) -> None:
        if self._pending == 0 and self._tx == 0:
            self.completed += 1
            if self.on_event is not None:
                self.on_event(("complete", self.env.now, self.name, self.completed - 1))
            self._pending = self.count
            done, self._phase_done = self._phase_done, self.env.event()
            done.succeed()

    def passes(self, parity: int) -> bool:
        """try_wait.parity: true once the phase with this parity has completed."""
        return (self.completed & 1) != parity

    def wait(self, parity: int):
        """Spin until `passes(parity)`; a waiter that had to block pays the wake-up latency, one
        that finds the phase complete pays one probe (`probe_clk`)."""
        if self.passes(parity):
            if self.probe_clk:
                yield self.env.timeout(self.probe_clk)
            return
        while not self.passes(parity):
            yield self._phase_done
        yield self.env.timeout(self.wake_clk)


class Ring:
    """`stages` slots of shared memory, each guarded by a `full` and an `empty` mbarrier.

    Block j lives in slot j % stages; its barrier phase parity is (j // stages) & 1. The producer
    waits `empty` with the opposite parity (so the first lap passes at once, as in CUTLASS), the
    consumers wait `full`.
    """

    def __init__(self, env, name: str, stages: int, consumers: int, wake_clk: float,
                 probe_clk: float = 0.0):
        if stages < 1:
            raise ValueError(f"ring {name}: stages must be >= 1, got {stages}")
        self.name, self.stages = name, stages
        self.full = [MBarrier(env, f"{name}.full[{s}]", 1, wake_clk, probe_clk)
                     for s in range(stages)]
        self.empty = [MBarrier(env, f"{name}.empty[{s}]", consumers, wake_clk, probe_clk)
                      for s in range(stages)]

    def slot(self, j: int) -> tuple[int, int]:
        """(slot, phase parity) of block j."""
        return j % self.stages, (j // self.stages) & 1


def turn_parity(k: int, wg: int) -> int:
    """The parity warpgroup `wg` waits on its turn barrier for its k-th turn.

    A fresh mbarrier counts as having completed the phase before phase 0, so warpgroup 0 waits
    with parity (k & 1) ^ 1 and its first turn falls through; every other wait, warpgroup 0's
    later ones included, needs the previous warpgroup's k-th hand-over, which completes exactly
    the phase of parity k & 1. The kernels spell it the same (`turn_parity(k, WG)`)."""
    return (k & 1) ^ int(wg == 0)


class Turns:
    """Ordered turns among n warpgroups (pingpong): WG w may issue its GEMMs on its k-th turn once
    WG w-1 has passed the turn on; WG 0 goes first. Built from one mbarrier per WG, as the Gluon
    kernels do (Gluon has no named barriers); the CUDA twins use bar.sync with named ids."""

    def __init__(self, env, n: int, wake_clk: float, probe_clk: float = 0.0):
        self.n = n
        self.bar = [MBarrier(env, f"turn[{w}]", 1, wake_clk, probe_clk) for w in range(n)]

    def wait(self, wg: int, k: int):
        """wait_turn: block until warpgroup wg's k-th turn."""
        yield from self.bar[wg].wait(turn_parity(k, wg))

    def pass_turn(self, wg: int) -> None:
        """pass_turn: warpgroup wg's GEMMs are queued; the next warpgroup's turn."""
        self.bar[(wg + 1) % self.n].arrive()
