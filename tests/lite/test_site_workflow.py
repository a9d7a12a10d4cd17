"""The Pages workflow (.github/workflows/site.yml) cannot run here; what it calls can. These
checks tie it to what is tested: it builds with `make site` (a Makefile target), publishes
the folder scripts/build_site.py writes, and runs on pushes to main."""

from __future__ import annotations

import re
from pathlib import Path

import build_site  # scripts/, on sys.path through tests/conftest.py
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = yaml.safe_load((ROOT / ".github" / "workflows" / "site.yml").read_text())


def steps() -> list[dict]:
    return WORKFLOW["jobs"]["build"]["steps"]


def test_it_builds_with_make_site_a_target_of_the_makefile():
    commands = [step["run"] for step in steps() if "run" in step]
    assert commands == ["make site"]
    assert re.search(r"^site:", (ROOT / "Makefile").read_text(), re.MULTILINE)


def test_it_publishes_the_folder_the_build_writes():
    (upload,) = [step for step in steps()
                 if step.get("uses", "").startswith("actions/upload-pages-artifact")]
    assert ROOT / upload["with"]["path"] == build_site.OUTPUT


def test_it_runs_on_each_push_to_main():
    triggers = WORKFLOW[True]  # YAML 1.1 reads the key `on` as true
    assert triggers["push"]["branches"] == ["main"]
    assert WORKFLOW["permissions"]["pages"] == "write"
