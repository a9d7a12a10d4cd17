"""The course machinery around the library: exercise checks (`grading`), running and
scoring exercise notebooks (`classroom`), the lessons' self-check questions (`quiz`), the
lesson's scripted demo (`demo`) and the interactive chat (`chat`).

None of it is needed to use `vmem` in an agent; the library never imports it.
"""
