"""Records: what a measurement leaves behind, and how to read it back.

* `RESULTS`: the folder of measured JSON, traces, logs and the lab notebook;
* `records.trace`: a Proton trace read into lanes per CTA and role, and its summary;
* `records.spans`: the measures read off a lane (busy fractions, mean spans, the steady window).

A leaf: imports nothing else of ours. The instruments write these records, fidelity reads them,
and neither imports the other.
"""
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"
