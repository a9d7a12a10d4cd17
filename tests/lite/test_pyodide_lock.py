"""scripts/pyodide_lock.py: the site's lock lists exactly the wheels it serves, each with its
own file name and sha256, so Pyodide loads them from the site and from nowhere else."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from pyodide_lock import Wheel, normalize, patch_lock  # scripts/, on sys.path via conftest

LOCK = {"info": {"python": "3.14.2"}, "packages": {
    "ipython": {"name": "ipython", "version": "9.0", "file_name": "ipython-9.0-cdn.whl",
                "sha256": "cdn", "depends": ["traitlets", "prompt_toolkit", "pygments"],
                "imports": ["IPython"], "package_type": "package"},
    "traitlets": {"name": "traitlets", "version": "5.0", "file_name": "traitlets-5.0-cdn.whl",
                  "sha256": "cdn", "depends": [], "imports": ["traitlets"],
                  "package_type": "package"},
    "numpy": {"name": "numpy", "version": "2.0", "file_name": "numpy-2.0-wasm.whl",
              "sha256": "cdn", "depends": [], "imports": ["numpy"], "package_type": "package"},
}}


def wheel(folder: Path, name: str, version: str, files: list[str],
          requires: tuple[str, ...] = ()) -> Path:
    path = folder / f"{name}-{version}-py3-none-any.whl"
    metadata = "\n".join([f"Name: {name}", f"Version: {version}",
                          *(f"Requires-Dist: {req}" for req in requires)]) + "\n\nA body."
    with zipfile.ZipFile(path, "w") as archive:
        for file in files:
            archive.writestr(file, "")
        archive.writestr(f"{name}-{version}.dist-info/METADATA", metadata)
    return path


def test_shipped_wheels_replace_the_cdn_entries_and_the_rest_is_dropped(tmp_path):
    ipython = wheel(tmp_path, "ipython", "9.12.0", ["IPython/__init__.py"])
    traitlets = wheel(tmp_path, "traitlets", "5.14.3", ["traitlets/__init__.py"])
    lock = patch_lock(LOCK, [Wheel.read(ipython), Wheel.read(traitlets)])
    assert set(lock["packages"]) == {"ipython", "traitlets"}  # numpy: not served, not listed
    entry = lock["packages"]["ipython"]
    assert entry["file_name"] == ipython.name and entry["version"] == "9.12.0"
    assert entry["sha256"] == hashlib.sha256(ipython.read_bytes()).hexdigest()
    assert entry["depends"] == ["traitlets"]  # what the site does not serve is not asked for
    assert entry["imports"] == ["IPython"] and lock["info"] == LOCK["info"]
    assert LOCK["packages"]["ipython"]["sha256"] == "cdn"  # the input is left as it was


def test_a_wheel_the_lock_lacks_gets_an_entry_from_its_metadata(tmp_path):
    vmem = wheel(tmp_path, "vmem", "0.1.0", ["vmem/__init__.py", "vmem/data/x.json"])
    widgets = wheel(tmp_path, "ipywidgets", "8.1.9", ["ipywidgets/__init__.py", "extra.py"],
                    requires=("comm>=0.1.3", "traitlets>=4.3.1",
                              'pytest>=3.6.0; extra == "test"'))
    traitlets = wheel(tmp_path, "traitlets", "5.14.3", ["traitlets/__init__.py"])
    lock = patch_lock(LOCK, [Wheel.read(path) for path in (vmem, widgets, traitlets)])
    assert lock["packages"]["vmem"]["imports"] == ["vmem"]
    assert lock["packages"]["ipywidgets"]["imports"] == ["extra", "ipywidgets"]
    assert lock["packages"]["ipywidgets"]["depends"] == ["traitlets"]  # comm: not served
    assert lock["packages"]["vmem"]["package_type"] == "package"


def test_names_compare_as_pep_503_says():
    assert normalize("Prompt_Toolkit") == normalize("prompt-toolkit") == "prompt-toolkit"
    assert normalize("stack.data") == "stack-data"
