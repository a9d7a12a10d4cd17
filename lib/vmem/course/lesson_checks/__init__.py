"""The checks that follow the learner's stubs in the lessons, one module per lesson
(`l02`, `l03`, `l04`, `l05`, `l07`), with what they share in `common`.

A lesson check never stops the notebook: it prints one line (passed, not right yet, or
not written yet) and returns the part the notebook goes on with, the learner's when it
passed and `vmem`'s otherwise. The exercise checks (`vmem.course.checks`) fail instead.
"""
