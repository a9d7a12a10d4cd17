"""What only the PostgreSQL backend has to prove: the URLs it takes, a database that is not
ours refused untouched, the schema created once however many open it at once, and what a
refused writer is told. (Everything the backends share is tested on both, through the
`agent_target` fixture.)"""

from __future__ import annotations

import threading
from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql

from vmem.archival import ArchivalStore
from vmem.errors import AgentLockedError, StoreError, StoreFormatError
from vmem.memory import Memory
from vmem.storage import open_backend
from vmem.storage.postgres_schema import SCHEMA_VERSION


def _tables(url: str) -> list[tuple[str, list[tuple]]]:
    """Every table of the schema with all its rows: what "untouched" compares."""
    with psycopg.connect(url) as conn:
        names = [row[0] for row in conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() ORDER BY 1")]
        return [(name, conn.execute(sql.SQL("SELECT * FROM {} ORDER BY 1").format(
            sql.Identifier(name))).fetchall()) for name in names]


def test_every_url_form_reaches_the_same_database(postgres_server, postgres_url):
    ArchivalStore(postgres_url).insert("the lighthouse keeper's log")
    schema = postgres_url.rsplit("%3D", 1)[1]
    folder = str(postgres_server.folder)
    options = f"options=-c%20search_path%3D{schema}"
    for url in (f"postgres://vmem@/postgres?host={quote(folder)}&{options}",  # short scheme
                f"postgresql://vmem@{quote(folder, safe='')}/postgres?{options}",  # host in URL
                f"postgresql:///postgres?user=vmem&host={folder}&{options}"):
        store = ArchivalStore(url)
        assert store.search("lighthouse").ids == [1], url
        store.backend.close()


def test_a_database_of_another_application_is_refused_untouched(postgres_url):
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id integer PRIMARY KEY, total numeric)")
        conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
    before = _tables(postgres_url)
    with pytest.raises(StoreFormatError, match="another application.*invoices"):
        Memory.open(postgres_url)
    assert _tables(postgres_url) == before


def test_a_newer_schema_is_refused_untouched(postgres_url):
    with Memory.open(postgres_url) as memory:
        memory.archival.insert("written by a later vmem")
        assert memory.backend.schema_version() == SCHEMA_VERSION
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE vmem_meta SET value = '99' WHERE key = 'schema_version'")
    before = _tables(postgres_url)
    with pytest.raises(StoreFormatError, match="newer vmem"):
        ArchivalStore(postgres_url)
    assert _tables(postgres_url) == before


def test_a_missing_schema_or_server_is_a_clear_error(postgres_server):
    with pytest.raises(StoreError, match="no schema of the search_path exists"):
        open_backend(f"{postgres_server.url}&options=-c%20search_path%3Dnowhere")
    with pytest.raises(StoreError, match="cannot connect"):
        open_backend("postgresql://vmem@/postgres?host=/nonexistent-folder")


def test_many_first_opens_at_once_create_the_schema_once(postgres_url):
    errors: list[BaseException] = []

    def open_one(number: int) -> None:
        try:
            with Memory.open(postgres_url, scope={"agent_id": f"a{number}"}) as memory:
                memory.archival.insert(f"agent {number} was here")
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=open_one, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    store = ArchivalStore(postgres_url)
    assert len(store) == 6 and store.search("agent").total == 6


def test_agents_are_locked_one_by_one_and_the_refusal_names_the_holder(postgres_url):
    ana, ben = {"user_id": "ana"}, {"user_id": "ben"}
    with Memory.open(postgres_url, scope=ana), Memory.open(postgres_url, scope=ben):
        with pytest.raises(AgentLockedError, match=r"\{'user_id': 'ana'\}.* is already open "
                                                   r"for writing by process \d+ on "):
            Memory.open(postgres_url, scope=ana)
        ArchivalStore(postgres_url, scope=ana).insert("readers and inserts still work")
    Memory.open(postgres_url, scope=ana).close()  # released with its connection


def test_a_password_never_shows_in_a_memorys_repr_or_messages(postgres_url):
    url = postgres_url.replace("vmem@", "vmem:hunter2@") + "&password=hunter2"
    with Memory.open(url) as memory:  # trust authentication: any password is accepted
        assert "hunter2" not in repr(memory) and ":***@" in repr(memory)
        with pytest.raises(AgentLockedError) as refused:
            Memory.open(url)
        assert "hunter2" not in str(refused.value)
