# exercise: ch02_producer
# file: producer.py
# loses: all
# bug: a memory bomb aimed at the grader, not at its own sandbox: the producer calls
#      `expect(0)` on a barrier millions of times without yielding. Each call is a 60-byte request
#      that the grader's model carries out in the grader's own process, logging an event there,
#      so uncounted they grow the grader (which no sandbox limit covers) by about 1.7 GB a test
#      and hold each test to its deadline. A session is stopped after more model calls than a
#      right role needs, and the status names the model-call limit (class 5).
# ruff: noqa  (known-wrong on purpose)


def producer(cta):
    me = cta.producer_name
    cta.load_q(me)
    bar = cta.k.full[0]
    for _ in range(10_000_000):
        bar.expect(0)
    yield cta.delay(1)
