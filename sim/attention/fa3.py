"""`fa3` — everything together: producer/consumer roles (`ws`), turns on the tensor core
(`ws_pingpong`) and, inside each consumer, Q·Kⱼᵀ and P_{j-1}·V_{j-1} issued back to back with the
softmax under them (`overlap`). This is the FlashAttention-3 forward (FA3 §3, tab. 2's 661 TFLOPs/s).
"""
from . import overlap
from .cta import AttentionCTA
from .ws import producer

WARP_SPECIALIZED = True
LIVE_S, LIVE_P = overlap.LIVE_S, overlap.LIVE_P


def consumer(cta: AttentionCTA, w: int):
    sw = cta.cfg.switches
    yield from overlap.consumer(cta, w, producer=True, turns="no_turns" not in sw,
                                rescale_early="rescale_early" in sw,
                                one_release="one_release" in sw)


def roles(cta: AttentionCTA):
    return [producer(cta)] + [consumer(cta, w) for w in range(cta.cfg.consumers)]
