"""Shared fixtures: a deterministic clock and the path to the shared real data."""

from __future__ import annotations

from pathlib import Path

import pytest

from vmem.clock import StepClock

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"
LOCOMO_PATH = SHARED_DATA / "locomo" / "locomo10.json"


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
