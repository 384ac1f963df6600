"""Autograded exercises for the Hopper warp-specialization course, and their grading tooling.

    python -m exercises list                 # the exercises, their files and points
    python -m exercises grade [PATH]         # grade a submission (default: this tree)
    python -m exercises release DEST         # write the student copy

See exercises/README.md.
"""
