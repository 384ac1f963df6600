# exercise: ch02_producer
# file: producer.py
# loses: all
# bug: does not write the producer: walks `gc.get_referrers(cta)` and `gc.get_objects()` for the
#      model's CTA (anything with a `produce` method or a `_cta`), and writes raw requests on the
#      grader channel (`course_remote.cta.CHANNEL`) naming the model's methods. The model lives in
#      the grader's process; the submission's holds only stand-ins and the channel, whose every
#      request the grader checks against the role's calls. Nothing is loaded.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 02 — the producer warpgroup of a K/V ring with ONE `full` barrier per slot."""
import gc


def producer(cta):
    me = cta.producer_name
    pool = list(gc.get_referrers(cta)) + gc.get_objects()
    for obj in pool:
        try:
            if type(obj).__name__ in ("AttentionCTA", "RoleView") and hasattr(obj, "produce"):
                yield from obj.produce(me)
                return
            inner = getattr(obj, "_cta", None)
            if inner is not None and hasattr(inner, "produce"):
                yield from inner.produce(me)
                return
        except Exception:
            continue
    try:
        import course_remote.cta as remote
        for req in ("produce", "load", "load_kv", "__getattribute__"):
            remote.CHANNEL.send({"req": req, "view": 0, "args": [me]})
            reply = remote.CHANNEL.recv()
            if reply and "value" in reply:
                return
    except Exception:
        pass
