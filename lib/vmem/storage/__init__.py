"""The storage layer: the `Backend` protocol every store goes through, the data it
exchanges (`Filter`, `Ranked`), and `open_backend`, which picks the backend for a target."""

from .backends import open_backend
from .base import Backend, Filter, Ranked

__all__ = ["Backend", "Filter", "Ranked", "open_backend"]
