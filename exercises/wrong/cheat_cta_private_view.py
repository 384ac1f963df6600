# exercise: ch02_producer
# file: producer.py
# loses: all
# bug: does not write the producer: digs into the CTA it is handed for the model's own one-call
#      helper — `cta._cta.produce`, the classes of `type(cta).__mro__`, `object.__getattribute__(cta,
#      "_view")` — and then asks the grader over the CTA's own channel for calls a role does not
#      have ("produce", "load", "_cta"), and yields a step token "produce". The CTA is a stand-in
#      that holds only a view number; the grader serves the role calls only and refuses the rest,
#      so nothing is loaded and the consumers never get a block.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 02 — the producer warpgroup of a K/V ring with ONE `full` barrier per slot."""


def _helpers(cta):
    found = []
    for get in (lambda: cta._cta, lambda: object.__getattribute__(cta, "_cta"),
                lambda: cta.produce, lambda: cta._cta.produce):
        try:
            found.append(get())
        except Exception:
            pass
    for klass in type(cta).__mro__:
        for name in ("produce", "load", "producer"):
            if name in vars(klass):
                found.append(getattr(cta, name))
    return found


def producer(cta):
    me = cta.producer_name
    for h in _helpers(cta):
        try:
            out = h(me) if callable(h) else getattr(h, "produce")(me)
            if hasattr(out, "__next__"):
                yield from out
                return
        except Exception:
            pass
    try:
        view = object.__getattribute__(cta, "_view")
        import course_remote.cta as remote
        for req in ("produce", "load", "_cta"):
            try:
                remote.ask(view, req, me)
                return
            except Exception:
                pass
        try:
            yield remote.Token("produce", (me,))
        except Exception:
            pass
    except Exception:
        pass
