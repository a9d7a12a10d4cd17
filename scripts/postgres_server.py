"""A throwaway PostgreSQL server on a Unix socket, for the tests, the benchmark and trying
vmem's PostgreSQL backend by hand.

    python scripts/postgres_server.py     # prints a URL, serves until Ctrl-C, then deletes it

The server binaries come from the `pgserver` package on PyPI (pinned in
requirements-dev.txt, so `make setup` installs them; nothing needs root), or from
`$VMEM_PG_BIN`, or from Debian's `postgresql` package. The server lives in a new
temporary folder: its data, its log and its socket (it listens on no TCP port), and is
deleted when stopped. PostgreSQL refuses to run as root, so as root it runs as the
unprivileged user `nobody`, from a copy of the binaries when `nobody` cannot reach them
(a virtual environment under /root, for instance).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

UNPRIVILEGED_USER = "nobody"
SUPERUSER = "vmem"
# Durability is pointless for a server deleted after the run (tests kill clients, never
# the server); the benchmark passes its own settings.
FAST_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
                 "max_connections": "300"}
START_TIMEOUT_S = 60


class ServerError(RuntimeError):
    """The throwaway server could not be found, initialised or started (says why)."""


def find_binaries() -> Path:
    """The folder holding `initdb`, `pg_ctl` and `postgres`."""
    override = os.environ.get("VMEM_PG_BIN")
    candidates = [Path(override)] if override else []
    spec = importlib.util.find_spec("pgserver")  # found without importing it
    if spec is not None and spec.submodule_search_locations:
        candidates.append(Path(spec.submodule_search_locations[0]) / "pginstall" / "bin")
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                         key=lambda path: int(path.parent.name), reverse=True)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    raise ServerError(
        "no PostgreSQL server binaries found: run `make setup` (installs the pinned "
        "`pgserver` package from requirements-dev.txt), or set VMEM_PG_BIN to a folder "
        "holding initdb and pg_ctl, or install Debian's `postgresql`.")


class ThrowawayPostgres:
    """One PostgreSQL server in a temporary folder; `with ThrowawayPostgres() as server:`
    starts it and deletes it afterwards. `url` (a Unix-socket URL for the superuser)
    opens its `postgres` database; `url_for(name)` opens another."""

    def __init__(self, settings: Mapping[str, str] = FAST_SETTINGS) -> None:
        self.settings = dict(settings)
        self.folder: Path | None = None
        self._bin: Path | None = None
        self._user: str | None = UNPRIVILEGED_USER if os.geteuid() == 0 else None

    @property
    def url(self) -> str:
        return self.url_for("postgres")

    def url_for(self, database: str) -> str:
        if self.folder is None:
            raise ServerError("the server is not running")
        return f"postgresql://{SUPERUSER}@/{database}?host={quote(str(self.folder))}"

    def start(self) -> ThrowawayPostgres:
        """Initialise a new cluster and start it; on failure, say why and clean up."""
        began = time.monotonic()
        self.folder = Path(tempfile.mkdtemp(prefix="vmem-pg-"))
        try:
            self.folder.chmod(0o755)
            self._bin = self._reachable(find_binaries())
            data = self.folder / "data"
            data.mkdir()
            if self._user is not None:
                for path in (self.folder, data):
                    shutil.chown(path, self._user)
            self._run("initdb", "-D", str(data), "-U", SUPERUSER, "--auth=trust",
                      "--encoding=UTF8", "--locale=C", "--no-sync")
            options = " ".join(f"-c {key}={value}" for key, value in {
                "listen_addresses": "''", "unix_socket_directories": str(self.folder),
                **self.settings}.items())
            self._run("pg_ctl", "-D", str(data), "-l", str(self.folder / "server.log"), "-w",
                      "-t", str(START_TIMEOUT_S), "-o", options, "start")
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - began
        return self

    def stop(self) -> None:
        """Stop the server (at once: its data is deleted anyway) and delete its folder; safe
        to call twice."""
        if self.folder is None:
            return
        data = self.folder / "data"
        if (data / "postmaster.pid").exists():
            with contextlib.suppress(ServerError):  # already gone: nothing left to stop
                self._run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = None

    def __enter__(self) -> ThrowawayPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- helpers ------------------------------------------------------------------
    def _run(self, program: str, *args: str) -> None:
        command = [str(self._bin / program), *args]
        if self._user is not None:
            command = ["runuser", "-u", self._user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.folder,
                              timeout=START_TIMEOUT_S + 30)
        if done.returncode != 0:
            log = self.folder / "server.log" if self.folder else None
            tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
            raise ServerError(f"{program} failed (exit {done.returncode}):\n{done.stdout}"
                              f"{done.stderr}{tail}")

    def _reachable(self, binaries: Path) -> Path:
        """`binaries`, or a copy of the installation the server's user can run."""
        if self._user is None or subprocess.run(
                ["runuser", "-u", self._user, "--", "test", "-x", str(binaries / "postgres")]
        ).returncode == 0:
            return binaries
        # the installation (bin, lib, share) and, for pgserver's wheel, the shared
        # libraries its rpath reaches as ../../../pgserver.libs
        install = binaries.parent
        copy = self.folder / "install" / install.parent.name / install.name
        for part in ("bin", "lib", "share"):
            shutil.copytree(install / part, copy / part, symlinks=True)
        libs = install.parent.parent / f"{install.parent.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, copy.parent.parent / libs.name, symlinks=True)
        shutil.chown(self.folder / "install", self._user)
        return copy / "bin"


def main() -> int:
    with ThrowawayPostgres() as server:
        print(f"PostgreSQL is up ({server.started_in:.1f} s): {server.url}", flush=True)
        print("Ctrl-C stops it and deletes its data.", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("stopping", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
