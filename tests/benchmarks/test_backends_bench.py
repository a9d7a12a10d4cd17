"""`benchmarks/backends.py` at smoke size: it runs both backends, its tables have the
promised rows, and every question's top 10 is the same on SQLite and PostgreSQL."""

from __future__ import annotations

import backends as bench  # benchmarks/backends.py: conftest puts benchmarks/ on sys.path


def test_the_backend_benchmark_runs_and_both_backends_agree(capsys, postgres_server):
    bench.main(["--sizes", "300", "--agents", "2", "--rounds", "3"])
    out = capsys.readouterr().out
    assert "| 300 | SQLite |" in out and "| 300 | PostgreSQL |" in out
    assert "the same on both backends: yes" in out
    assert "| SQLite (a file per agent) |" in out and "| PostgreSQL (one database) |" in out
    assert "| PostgreSQL (a schema per agent) |" in out
