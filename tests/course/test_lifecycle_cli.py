"""`python -m vmem forget | export | import`: what each prints, the round trip through a
file (`export > agent.json`, `import agent.json`), and the refusals with their exit
status 2 (no scope, a bad KEY=VALUE, a missing file, a held agent, a malformed or newer
agent file), each leaving the stores as they were."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from agent_builders import ANA, BEN, build_demo, build_neighbour, view

from vmem.__main__ import main
from vmem.memory import Memory


def vmem(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m vmem ARGS` in a new process."""
    return subprocess.run([sys.executable, "-m", "vmem", *args], capture_output=True,
                          text=True, timeout=120)


def run(*args: str) -> tuple[int, str]:
    """`main(ARGS)` in this process: (exit status, what it printed)."""
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


@pytest.fixture
def agents(tmp_path: Path) -> str:
    """An SQLite file holding the demo agent (Ana) and Ben."""
    path = str(tmp_path / "agents.db")
    build_demo(path, ANA)
    build_neighbour(path)
    return path


def test_forget_deletes_one_user_and_says_what(agents):
    done = vmem("forget", "--db", agents, "--scope", "user_id=ana")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("forgot {'user_id': 'ana'}: deleted ")
    assert "1 sessions" in done.stdout and "2 core_blocks" in done.stdout
    status, output = run("export", "--db", agents)
    assert status == 0
    assert [agent["scope"] for agent in json.loads(output)["agents"]] == [BEN]


def test_forget_refuses_without_a_scope_or_with_a_bad_one(agents, tmp_path, capsys):
    before = view(agents, ANA, scores=False)
    for args in (["forget", "--db", agents], ["forget", "--db", agents, "--scope", "ana"],
                 ["forget", "--db", agents, "--scope", "=ana"]):
        with pytest.raises(SystemExit) as exit_:
            run(*args)
        assert exit_.value.code == 2
    errors = capsys.readouterr().err
    assert "--scope" in errors and "wants KEY=VALUE such as user_id=u1" in errors
    assert run("forget", "--db", agents, "--scope", "user id=ana")[0] == 2
    assert "scope key 'user id'" in capsys.readouterr().err
    missing = str(tmp_path / "missing.db")
    assert run("forget", "--db", missing, "--scope", "user_id=ana")[0] == 2
    assert "does not exist" in capsys.readouterr().err and not Path(missing).exists()
    after = view(agents, ANA, scores=False)
    assert after["records"] == before["records"] and after["prompt"] == before["prompt"]


def test_forget_refuses_an_agent_another_process_writes(agents):
    with Memory.open(agents, scope=BEN):  # this process holds the file's writer lock
        done = vmem("forget", "--db", agents, "--scope", "user_id=ana")
    assert done.returncode == 2
    assert "already open for writing by process" in done.stderr
    assert len(view(agents, ANA, scores=False)["records"]) > 0


def test_export_then_import_gives_the_same_agents(agents, tmp_path):
    exported = vmem("export", "--db", agents)
    assert exported.returncode == 0, exported.stderr
    file, copy = tmp_path / "agent.json", str(tmp_path / "copy.db")
    file.write_text(exported.stdout, encoding="utf-8")
    done = vmem("import", str(file), "--db", copy)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("imported 2 scopes: ") and "every id kept" in done.stdout
    assert vmem("export", "--db", copy).stdout == exported.stdout
    for scope in (ANA, BEN):
        assert view(copy, scope) == view(agents, scope)


def test_export_one_scope_and_import_it_under_another(agents, tmp_path):
    status, output = run("export", "--db", agents, "--scope", "user_id=ben")
    assert status == 0
    assert [agent["scope"] for agent in json.loads(output)["agents"]] == [BEN]
    file = tmp_path / "ben.json"
    file.write_text(output, encoding="utf-8")
    target = str(tmp_path / "dana.db")
    assert run("import", str(file), "--db", target, "--scope", "user_id=dana")[0] == 0
    assert view(target, {"user_id": "dana"})["prompt"] == view(agents, BEN)["prompt"]


def test_the_commands_take_a_postgresql_url(postgres_url, tmp_path):
    build_demo(postgres_url, ANA)
    build_neighbour(postgres_url)
    status, output = run("forget", "--db", postgres_url, "--scope", "user_id=ana")
    assert status == 0 and output.startswith("forgot {'user_id': 'ana'}")
    status, output = run("export", "--db", postgres_url)
    assert status == 0 and [a["scope"] for a in json.loads(output)["agents"]] == [BEN]
    file, target = tmp_path / "ben.json", str(tmp_path / "ben.db")
    file.write_text(output, encoding="utf-8")
    assert run("import", str(file), "--db", target)[0] == 0
    assert view(target, BEN) == view(postgres_url, BEN)


@pytest.mark.parametrize(("content", "expected"), [
    ("{not json", "is not JSON"),
    ('{"format": "vmem-agent", "version": 99, "agents": []}',
     "format version 99, written by a newer vmem"),
    ('{"format": "vmem-agent", "version": 1, "agents": [{"scope": {"user_id": 5}}]}',
     r"agents\[0\].scope"),
])
def test_import_refuses_a_bad_file_and_creates_nothing(tmp_path, capsys, content, expected):
    file, target = tmp_path / "agent.json", tmp_path / "new.db"
    file.write_text(content, encoding="utf-8")
    assert run("import", str(file), "--db", str(target))[0] == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and re.search(expected, error)
    assert not target.exists()
    assert run("import", str(tmp_path / "absent.json"), "--db", str(target))[0] == 2
    assert "cannot read" in capsys.readouterr().err and not target.exists()
