"""Rewrite Pyodide's `pyodide-lock.json` for a site that serves its own wheels.

Pyodide's lock names every package its CDN serves. The browser course serves only what it
ships (`lite/kernel-wheels.txt` and vmem's wheel), so the site's lock must list exactly
those: an entry for a wheel we ship gets that wheel's file name, version and sha256 (PyPI's
builds differ from the CDN's, and Pyodide refuses a file whose hash differs), a wheel the
lock lacks (vmem, comm, ipywidgets) gets a new entry read from its metadata, and every
other package is dropped, so asking for one fails at once instead of fetching from a CDN.
"""

from __future__ import annotations

import hashlib
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MARKER = re.compile(r";")
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them: lower case, runs of -_. as one -."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Wheel:
    """What the lock needs to know about one pure-Python wheel."""

    path: Path
    name: str
    version: str
    sha256: str
    imports: tuple[str, ...]
    requires: tuple[str, ...]

    @classmethod
    def read(cls, path: Path) -> Wheel:
        """Read a wheel's name, version, top-level imports and unconditional requirements."""
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
            metadata = archive.read(f"{info}/METADATA").decode("utf-8")
        fields: dict[str, list[str]] = {}
        for line in metadata.split("\n\n", 1)[0].splitlines():
            key, _, value = line.partition(": ")
            fields.setdefault(key, []).append(value.strip())
        requires = tuple(normalize(m.group(1)) for req in fields.get("Requires-Dist", [])
                         if not _MARKER.search(req) and (m := _REQUIREMENT_NAME.match(req)))
        return cls(path=path, name=fields["Name"][0], version=fields["Version"][0],
                   sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                   imports=top_level_imports(names), requires=requires)


def top_level_imports(names: list[str]) -> tuple[str, ...]:
    """The importable top-level names in a wheel's file list (packages and modules)."""
    tops = set()
    for name in names:
        first, _, rest = name.partition("/")
        if first.endswith((".dist-info", ".data")):
            continue
        if rest or first.endswith(".py"):
            tops.add(first.removesuffix(".py"))
    return tuple(sorted(tops))


def patch_lock(lock: dict[str, Any], wheels: list[Wheel]) -> dict[str, Any]:
    """The lock for a site that serves exactly `wheels`, next to the lock file itself."""
    by_name = {normalize(key): entry for key, entry in lock["packages"].items()}
    shipped = {normalize(wheel.name) for wheel in wheels}
    packages: dict[str, Any] = {}
    for wheel in sorted(wheels, key=lambda w: normalize(w.name)):
        key = normalize(wheel.name)
        entry = dict(by_name.get(key) or {
            "name": wheel.name, "imports": list(wheel.imports), "package_type": "package",
            "install_dir": "site", "unvendored_tests": False, "shared_library": False,
            "depends": list(wheel.requires)})
        entry.update(version=wheel.version, file_name=wheel.path.name, sha256=wheel.sha256,
                     depends=[normalize(dep) for dep in entry["depends"]
                              if normalize(dep) in shipped])
        packages[key] = entry
    return {**lock, "packages": packages}
