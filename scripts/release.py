"""Make a student copy of the course: everything except the answers.

    python scripts/release.py DEST        (make release DEST=...)

Copies the files git knows about (committed or not, minus what .gitignore ignores) into
DEST, which must not exist yet or be empty, leaving out `solutions/` and the tests that
contain or need the answers. Students get the lessons, the library, the generated
exercises, `make grade` and the grading workflow for their fork. The hidden check data
still ships inside the library (vmem/course/data): a release deters copying, it cannot prevent it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Paths (relative to the repository root) a student copy must not contain.
WITHHELD = ("solutions/", "tests/course/test_grading.py", "tests/course/test_exercises.py",
            "tests/course/test_lessons.py", "tests/course/test_held_out.py")


def release_files(root: Path = ROOT) -> list[str]:
    """The repository's files, as git sees them, minus the withheld ones."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root, check=True, capture_output=True, text=True).stdout
    return sorted(name for name in listed.split("\0")
                  if name and not name.startswith(WITHHELD) and (root / name).is_file())


def release(dest: Path, root: Path = ROOT) -> int:
    """Copy the student files into `dest`; return how many were copied."""
    if dest.exists() and any(dest.iterdir()):
        raise SystemExit(f"{dest} is not empty: give a new folder for the student copy")
    files = release_files(root)
    for name in files:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return len(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="a new (or empty) folder for the student copy")
    args = parser.parse_args(argv)
    count = release(args.dest)
    print(f"{count} files copied to {args.dest} (without {', '.join(WITHHELD)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
