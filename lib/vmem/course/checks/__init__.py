"""The checks behind the exercise notebooks, one module per exercise (`ex01` ... `ex05`),
with the helpers they share in `common`. `vmem.course.grading` is the public face."""
