"""Evaluation: datasets (LoCoMo, synthetic long-horizon chat) and memory metrics.

`locomo` loads the real benchmark, `synthetic` generates seeded long conversations with
planted facts, `metrics` scores retrieval (evidence recall@k) and prompt assembly
(evidence in budget), `runner` ranks dialog turns under switchable configurations, and
`cli` is what `python -m vmem eval` runs.
"""
