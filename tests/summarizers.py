"""Summarizers that fail, for tests of the main context's failure path."""

from __future__ import annotations


class Boom:
    """A summarizer that raises, like an LLM summarizer whose model is offline."""

    def summarize(self, previous, evicted):
        raise RuntimeError("model offline")


class Silent:
    """A summarizer that returns only whitespace, which counts as a failure."""

    def summarize(self, previous, evicted):
        return "   "
