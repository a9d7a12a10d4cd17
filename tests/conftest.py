"""Shared fixtures: a deterministic clock and the path to the shared real data; puts
tests/helpers on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from vmem.clock import StepClock

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"
LOCOMO_PATH = SHARED_DATA / "locomo" / "locomo10.json"

# test helpers (fake servers, child processes, context helpers) are imported by name
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))  # the benchmark scripts, outside the library


@pytest.fixture
def clock() -> StepClock:
    """A clock that starts at 2024-01-01 09:00 UTC and ticks one second per call."""
    return StepClock()


@pytest.fixture
def locomo_path() -> Path:
    """The real LoCoMo file, or a skip that says where it was looked for."""
    if not LOCOMO_PATH.exists():
        pytest.skip(f"LoCoMo data not found at {LOCOMO_PATH} (see ../shared/data/README.md)")
    return LOCOMO_PATH
