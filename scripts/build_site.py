"""Build the browser course, `build/site`: what `make site` runs.

    python scripts/build_site.py [--output build/site]

Run it with the Python of `build/site-env` (lite/requirements.txt: JupyterLite, its Pyodide
kernel, the ipywidgets front end, setuptools). Everything comes from pinned packages on npm
and PyPI, never a CDN:

1. Pyodide from npm (`lite/package.json`, checked by `npm ci` against package-lock.json);
2. the kernel's wheels from PyPI (`lite/kernel-wheels.txt`, each checked by its sha256) and
   vmem's own wheel, built from this checkout (and, for the tests only, never served,
   `lite/test-wheels.txt` into build/site-cache/test-wheels);
3. a staging folder holding the site's settings (`lite/jupyter-lite.json`: the local Pyodide,
   no PyPI, vmem and ipywidgets loaded when the kernel starts) and `static/pyodide/`, the
   runtime beside those wheels and a lock that lists only them (scripts/pyodide_lock.py);
4. `jupyter lite build` over it, with notebooks/ and exercises/ as the site's files (in
   those two folders, as in a checkout, so `my_parts/` sits beside them as it does there).

Downloads are kept in build/site-cache, so a second build downloads no file again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from pyodide_lock import Wheel, normalize, patch_lock

ROOT = Path(__file__).resolve().parent.parent
LITE = ROOT / "lite"
OUTPUT = ROOT / "build" / "site"
CACHE = ROOT / "build" / "site-cache"
TEST_WHEELS = CACHE / "test-wheels"
CONTENTS = ("notebooks", "exercises")
RUNTIME_FILES = ("pyodide.mjs", "pyodide.js", "pyodide.asm.mjs", "pyodide.asm.wasm",
                 "python_stdlib.zip", "pyodide-lock.json", "package.json")
CDN_HOSTS = ("cdn.jsdelivr.net", "unpkg.com", "cdnjs", "pyodide-cdn")
KERNEL_SETTINGS = "@jupyterlite/pyodide-kernel-extension:kernel"


def run(command: list[str], **kwargs: object) -> None:
    """Run a command, echoing it, and stop the build when it fails."""
    print("+", " ".join(str(part) for part in command), flush=True)
    subprocess.run(command, check=True, **kwargs)  # type: ignore[call-overload]


def fetch_pyodide() -> Path:
    """Pyodide's npm package, installed from lite/package-lock.json (integrity-checked)."""
    package = LITE / "node_modules" / "pyodide"
    if not (package / "pyodide.asm.wasm").exists():
        if shutil.which("npm") is None:
            sys.exit("make site needs npm (Node.js) to fetch Pyodide from npm: install Node.js "
                     "18+ with npm (Debian: apt-get install nodejs npm)")
        run(["npm", "ci", "--omit=dev", "--no-audit", "--no-fund", "--ignore-scripts"],
            cwd=LITE)
    return package


def download(requirements: Path, folder: Path) -> list[Path]:
    """The wheels a hash-pinned requirements file names, fetched from PyPI into `folder`
    (pip checks every hash; cached files are not fetched again)."""
    run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
         "--only-binary=:all:", "--python-version", "3.14", "--require-hashes",
         "-r", str(requirements), "-d", str(folder)])
    pinned = {normalize(line.split("==")[0]) for line in requirements.read_text().splitlines()
              if line and not line.startswith("#")}
    return [path for path in sorted(folder.glob("*.whl"))
            if normalize(Wheel.read(path).name) in pinned]


def fetch_wheels() -> list[Path]:
    """The kernel's wheels and vmem's wheel built from this tree; and, for the tests that
    run the library under Pyodide (never served), the test-only wheels."""
    download(LITE / "test-wheels.txt", TEST_WHEELS)
    own = CACHE / "vmem"
    shutil.rmtree(own, ignore_errors=True)
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
         "--no-build-isolation", "-w", str(own), str(ROOT)])
    return download(LITE / "kernel-wheels.txt", CACHE / "wheels") + sorted(own.glob("*.whl"))


def stage(runtime: Path, wheels: list[Path]) -> Path:
    """The lite folder `jupyter lite build` reads: settings and the local Pyodide."""
    staging = CACHE / "lite"
    shutil.rmtree(staging, ignore_errors=True)
    pyodide = staging / "static" / "pyodide"
    pyodide.mkdir(parents=True)
    for name in RUNTIME_FILES:
        shutil.copy2(runtime / name, pyodide / name)
    for wheel in wheels:
        shutil.copy2(wheel, pyodide / wheel.name)
    lock = json.loads((runtime / "pyodide-lock.json").read_text(encoding="utf-8"))
    site_lock = patch_lock(lock, [Wheel.read(wheel) for wheel in wheels])
    (pyodide / "pyodide-lock.json").write_text(json.dumps(site_lock, indent=1), encoding="utf-8")
    shutil.copy2(LITE / "jupyter-lite.json", staging / "jupyter-lite.json")
    for folder in CONTENTS:  # the lite folder's files/ is the site's contents, folders kept
        shutil.copytree(ROOT / folder, staging / "files" / folder,
                        ignore=shutil.ignore_patterns("my_parts", ".ipynb_checkpoints", "*.db*"))
    return staging


def build(staging: Path, output: Path) -> None:
    """`jupyter lite build` of the staging folder into `output` (JupyterLab only)."""
    shutil.rmtree(output, ignore_errors=True)
    jupyter = Path(sys.executable).parent / "jupyter"
    run([str(jupyter), "lite", "build", "--lite-dir", str(staging), "--output-dir",
         str(output), "--apps", "lab", "--no-sourcemaps", "--no-unused-shared-packages"],
        cwd=staging)


def check(output: Path) -> None:
    """Refuse a site whose settings name a CDN or whose kernel would not load vmem."""
    for config in output.rglob("jupyter-lite.json"):
        text = config.read_text(encoding="utf-8")
        hosts = [host for host in CDN_HOSTS if host in text]
        if hosts:
            sys.exit(f"{config} names a CDN ({', '.join(hosts)}): the site must serve it all")
    settings = json.loads((output / "jupyter-lite.json").read_text(encoding="utf-8"))
    kernel = settings["jupyter-config-data"]["litePluginSettings"][KERNEL_SETTINGS]
    lock = json.loads((output / "static" / "pyodide" / "pyodide-lock.json").read_text())
    missing = [name for name in kernel["loadPyodideOptions"]["packages"]
               if name not in lock["packages"]]
    if missing:
        sys.exit(f"the kernel loads {missing}, which the site's lock lacks")


def size_mb(folder: Path) -> float:
    """The total size of the files under `folder`, in MB (10**6 bytes)."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    started = time.monotonic()
    runtime = fetch_pyodide()
    staging = stage(runtime, fetch_wheels())
    build(staging, args.output)
    check(args.output)
    print(f"site: {args.output} ({size_mb(args.output):.1f} MB) built in "
          f"{time.monotonic() - started:.0f} s; serve it with "
          f"`python -m http.server -d {args.output}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
