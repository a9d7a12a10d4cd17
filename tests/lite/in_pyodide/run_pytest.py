"""Run pytest inside Pyodide on the library's tests in /repo (see run_in_pyodide.mjs).

The arguments are pytest's. The rootdir and the config are the project's, the cache
plugin is off and the working folder is in memory, so nothing is written into the repo.
"""

import sys

import pytest

sys.exit(pytest.main(["--rootdir=/repo", "-c", "/repo/pyproject.toml", "-p", "no:cacheprovider",
                      *sys.argv[1:]]))
