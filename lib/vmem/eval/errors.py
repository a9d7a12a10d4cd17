"""The evaluation's one error: a dataset or a metric argument it cannot use."""

from __future__ import annotations

from ..errors import VMemError


class DatasetError(VMemError):
    """An evaluation could not run: a malformed dataset file, or a question or metric
    argument it cannot score (no evidence, k below 1)."""
