"""What runs on the submission's side of the grader: copied into every sandbox (and nothing else
of the grader's tree is). `serve.main` answers the grader's requests; `codec` turns values into
JSON and back; `cta` is the CTA a student's role talks to, a stand-in whose every call is carried
out by the grader's own model in the grader's process. Only the standard library (numpy when an
array travels)."""
