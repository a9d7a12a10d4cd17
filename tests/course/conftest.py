"""The course tests run lesson checks that keep a learner's part when it passes
(`vmem.course.parts`): each test keeps them in its own temporary folder, never in the
project."""

from __future__ import annotations

from pathlib import Path

import pytest

from vmem.course import parts


@pytest.fixture(autouse=True)
def parts_in_a_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parts, "working_folder", lambda: tmp_path)
