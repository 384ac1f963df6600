# exercise: ch03_pingpong
# file: pingpong.py
# loses: test_turns_alternate, test_three_warpgroups
# bug: wait_turn never waits on the turn barrier: it sleeps until a turn time computed from the
#      clock ((k·n + w)·12 clk, the alone test's 10 clk of work plus slack), so the turns come in
#      order there by timing alone. The consumer loop waits on the barrier itself (inline), so
#      the CTA tests see FA3's turns. The turn-order tests now read from the log a wait on
#      turns.bar[w] (parity k & 1) for every turn taken.
# ruff: noqa  (known-wrong on purpose)


def open_turns(cta, w):
    if w == 0:
        cta.turns.bar[0].arrive()


def wait_turn(cta, w, k):
    due = (k * cta.turns.n + w) * 12.0
    now = cta.now
    if due > now:
        yield cta.delay(due - now)


def pass_turn(cta, w):
    cta.turns.bar[(w + 1) % cta.turns.n].arrive()


def consumer(cta, w):
    me = cta.wg(w)
    open_turns(cta, w)
    yield from cta.wait(me, cta.q_full, 0)
    for j in range(cta.n_blocks):
        yield from cta.acquire(me, cta.k, j)
        yield from cta.wait(me, cta.turns.bar[w], j & 1)     # not wait_turn
        scores = cta.qk(w, j)
        pass_turn(cta, w)
        yield scores
        cta.release(cta.k, j)
        yield from cta.softmax(w, j)
        yield from cta.rescale(w, j)
        yield from cta.acquire(me, cta.v, j)
        yield from cta.pack(w, j)
        yield cta.pv(w, j)
        cta.release(cta.v, j)
    yield from cta.epilogue(w)
