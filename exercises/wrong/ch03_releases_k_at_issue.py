# exercise: ch03_pingpong
# file: pingpong.py
# loses: test_schedule_runs, test_two_and_three_consumers_in_the_cta
# bug: FA3's turns done right, but K_j's slot is released together with the hand-over, as soon as
#      Q·K_jᵀ is issued, before warpgroup_mma_wait: the producer may refill the slot while the
#      wgmma still reads K_j from it (a write-after-read race on the GPU). Judged at the wgmma's
#      issue only, it passed every rule and, in most draws, the cycle count.
# ruff: noqa  (known-wrong on purpose)


def open_turns(cta, w):
    if w == 0:
        cta.turns.bar[0].arrive()


def wait_turn(cta, w, k):
    yield from cta.wait(cta.wg(w), cta.turns.bar[w], k & 1)


def pass_turn(cta, w):
    cta.turns.bar[(w + 1) % cta.turns.n].arrive()


def consumer(cta, w):
    me = cta.wg(w)
    open_turns(cta, w)
    yield from cta.wait(me, cta.q_full, 0)
    for j in range(cta.n_blocks):
        yield from cta.acquire(me, cta.k, j)
        yield from wait_turn(cta, w, j)
        scores = cta.qk(w, j)
        pass_turn(cta, w)
        cta.release(cta.k, j)           # K_j is still being read by the wgmma
        yield scores
        yield from cta.softmax(w, j)
        yield from cta.rescale(w, j)
        yield from cta.acquire(me, cta.v, j)
        yield from cta.pack(w, j)
        yield cta.pv(w, j)
        cta.release(cta.v, j)
    yield from cta.epilogue(w)
