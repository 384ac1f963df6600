"""Values as JSON, both ways; used on both sides of the pipe.

JSON's own types travel as themselves (floats may be NaN or ±inf). A tuple is ``{"t": [...]}``, a
dict ``{"d": [[key, value], ...]}`` (keys any encodable value), a numpy array ``{"nd": [dtype,
shape, base64 of its bytes]}`` (numeric dtypes only), and a few marked records the two sides
agree on (``{"rec": {...}}`` a read-only record of named fields, ``{"ref": [kind, id]}`` a handle
to something that lives on the grader's side). Anything else is refused with a TypeError naming
its type: nothing is ever pickled.
"""
import base64

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")
MAX_DEPTH = 64
# values that are their own encoding (exact types: a subclass of int or str goes the long way);
# a dict's or a list's entries of these are copied without a call per entry, to the same result
_PLAIN = (type(None), bool, int, float, str)


class Record:
    """Read-only named fields (a Hardware or a config as the submission sees it)."""

    def __init__(self, fields):
        object.__setattr__(self, "_fields", dict(fields))

    def __getattr__(self, name):
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError("no field {!r} (fields: {})".format(name, ", ".join(sorted(self._fields)))) from None

    def __setattr__(self, name, value):
        raise AttributeError("read-only record")

    def __repr__(self):
        return "Record({})".format(", ".join("{}={!r}".format(*kv) for kv in sorted(self._fields.items())))


class Ref:
    """A handle to an object on the other side of the pipe (an event, a CTA view)."""

    __slots__ = ("id", "kind")

    def __init__(self, kind, id):
        self.kind, self.id = kind, id

    def __eq__(self, other):
        return isinstance(other, Ref) and (self.kind, self.id) == (other.kind, other.id)

    def __hash__(self):
        return hash((self.kind, self.id))

    def __repr__(self):
        return f"<{self.kind} {self.id}>"


def encode(obj, hook=None, depth=0):
    """JSON data for `obj`; `hook(obj)` may return an encoding for types it knows (or None)."""
    if depth > MAX_DEPTH:
        raise TypeError(f"nested deeper than {MAX_DEPTH} levels")
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    if isinstance(obj, list):
        return [x if type(x) in _PLAIN else encode(x, hook, depth + 1) for x in obj]
    if isinstance(obj, tuple):
        return {"t": [x if type(x) in _PLAIN else encode(x, hook, depth + 1) for x in obj]}
    if isinstance(obj, dict):
        return {"d": [[k if type(k) in _PLAIN else encode(k, hook, depth + 1),
                       v if type(v) in _PLAIN else encode(v, hook, depth + 1)]
                      for k, v in obj.items()]}
    if isinstance(obj, Record):
        return {"rec": encode(obj._fields, hook, depth + 1)}
    if isinstance(obj, Ref):
        return {"ref": [str(obj.kind), int(obj.id)]}
    if hook is not None:
        done = hook(obj)
        if done is not None:
            return done
    mod = type(obj).__module__
    if mod == "numpy":
        import numpy as np
        if isinstance(obj, np.ndarray):
            if obj.dtype.name not in DTYPES:
                raise TypeError(f"an array of dtype {obj.dtype} (numeric dtypes only)")
            data = base64.b64encode(np.ascontiguousarray(obj).tobytes()).decode("ascii")
            return {"nd": [obj.dtype.name, list(obj.shape), data]}
        if isinstance(obj, np.generic):
            return encode(obj.item(), hook, depth + 1)
    raise TypeError(f"a value of type {mod}.{type(obj).__qualname__} cannot travel (JSON data, tuples, dicts and numeric "
                    "numpy arrays can)")


def decode(data, hook=None, depth=0):
    """The value `data` (from `encode`) stands for; `hook(tag, payload)` builds marked records
    of its own (or returns None for the defaults: `Record`, `Ref`)."""
    if depth > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [x if type(x) in _PLAIN else decode(x, hook, depth + 1) for x in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError(f"not an encoded value: {str(data)[:80]!r}")
    (tag, body), = data.items()
    if tag == "t" and isinstance(body, list):
        return tuple(x if type(x) in _PLAIN else decode(x, hook, depth + 1) for x in body)
    if tag == "d" and isinstance(body, list):
        out = {}
        for pair in body:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise ValueError("a dict entry that is not a [key, value] pair")
            key, value = pair
            if type(key) not in _PLAIN:
                key = decode(key, hook, depth + 1)
                if isinstance(key, (list, dict)):
                    raise ValueError("an unhashable dict key")  # noqa: TRY004 - malformed data
            out[key] = value if type(value) in _PLAIN else decode(value, hook, depth + 1)
        return out
    if tag == "nd":
        return _array(body)
    if hook is not None:
        made = hook(tag, body)
        if made is not None:
            return made
    if tag == "rec":
        fields = decode(body, hook, depth + 1)
        if not isinstance(fields, dict) or not all(isinstance(k, str) for k in fields):
            raise ValueError("a record's fields are not named")
        return Record(fields)
    if tag == "ref" and isinstance(body, list) and len(body) == 2 \
            and isinstance(body[0], str) and isinstance(body[1], int):
        return Ref(body[0], body[1])
    raise ValueError(f"unknown encoded value {tag!r}")


def _array(body):
    import numpy as np
    if not (isinstance(body, list) and len(body) == 3 and body[0] in DTYPES
            and isinstance(body[1], list) and all(isinstance(n, int) and n >= 0 for n in body[1])
            and isinstance(body[2], str)):
        raise ValueError("a malformed array")
    raw = base64.b64decode(body[2].encode("ascii"), validate=True)
    dtype = np.dtype(body[0])
    count = 1
    for n in body[1]:
        count *= n
    if len(raw) != count * dtype.itemsize:
        raise ValueError("an array whose bytes do not match its shape")
    return np.frombuffer(raw, dtype=dtype).reshape(body[1]).copy()
