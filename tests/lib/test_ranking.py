"""Memory-aware ranking (`vmem.ranking`): what recall indexes, the priors, questions about
the present, and the one analyzer.

The exactness contract: a `RecallStore` on either backend and a reference built here from
`BM25Index(idf="fts5")` over the same `recall_document`s, with the same priors, return
the same ids and scores on every page, so the priors add nothing a reader cannot redo.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_checks import check_index  # conftest puts tests/helpers on sys.path

from vmem import Memory
from vmem.archival import ArchivalStore
from vmem.bm25 import STOPWORDS, BM25Index, analyze, stem, tokenize
from vmem.messages import Hit, Message
from vmem.ranking import (
    INDEX_VERSION,
    OPENING,
    POOL,
    PROMPT_ONLY,
    PROMPT_TERMS,
    SEARCHABLE_ROLES,
    SITTING,
    SPEAKER,
    Priors,
    query_terms,
    recall_document,
    rerank,
    sitting_place,
    sitting_places,
)
from vmem.recall import RecallStore
from vmem.storage.base import Filter
from vmem.store import BUSY_TIMEOUT_MS
from vmem.tools import MemoryTools
from vmem.transfer import copy_agents

START = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
WORDS = ["trip", "trips", "painting", "painted", "Lisbon", "Porto", "moved", "job", "dog",
         "dogs", "the", "and", "now", "still", "started", "class", "classes", "café"]
NAMES = ["Ana", "Bo", None]
GAPS = [timedelta(seconds=5), timedelta(minutes=20), timedelta(hours=3), timedelta(days=4)]
PRIORS = [Priors(), Priors(sitting=0.0), Priors(speaker=0.0), Priors(current_state=False),
          Priors(sitting=1.0, speaker=0.05), Priors(prompt_only=0.0, opening=0.0),
          Priors(prompt_only=0.9, opening=1.0)]


def _conversation(rng: random.Random, size: int) -> list[Message]:
    moment, messages = START, []
    for _ in range(size):
        moment += rng.choice(GAPS)
        role = rng.choice(["user", "user", "assistant", "tool"])
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))
        messages.append(Message(role=role, content=text, name=rng.choice(NAMES),
                                created_at=moment, tool_call_id="c" if role == "tool" else None))
    return messages


def _reference(messages: list[Message], query: str, priors: Priors) -> list[Hit]:
    """The whole ranking, recomputed from `BM25Index(idf="fts5")`, `sitting_places` and
    `rerank`."""
    index, by_id, previous = BM25Index(k1=1.2, b=0.75, idf="fts5"), {}, None
    for message in messages:
        if message.role in SEARCHABLE_ROLES:
            index.add(message.id, recall_document(message, previous))
            by_id[message.id], previous = message, message
    places = sitting_places(by_id.values())
    terms = " ".join(query_terms(query, priors))

    def hit(doc: int, score: float) -> Hit:
        parts: dict[str, float] = {}  # a repeated query word's parts add up, as the store's
        for part in index.explain(terms, doc).terms:
            if part.tf:
                parts[part.term] = parts.get(part.term, 0.0) + part.contribution
        return Hit(by_id[doc], score, parts)
    ranked = index.search(terms, k=len(index))
    pool = [hit(doc, score) for doc, score in ranked[:POOL]]
    rest = [hit(doc, score) for doc, score in ranked[POOL:]]
    return rerank(pool, query, priors, places if priors.opening else None) + rest


def _assert_pages_equal(store: RecallStore, expected: list[Hit], query: str,
                        page_size: int) -> None:
    for page in range(len(expected) // page_size + 1):
        found = store.search(query, page_size=page_size, page=page)
        want = expected[page * page_size:(page + 1) * page_size]
        assert found.ids == [hit.record.id for hit in want], (query, page)
        for hit, reference in zip(found.hits, want, strict=True):
            assert hit.score == pytest.approx(reference.score, rel=1e-9, abs=1e-12)
            assert hit.note == reference.note
            assert sum(hit.terms.values()) == pytest.approx(hit.score, rel=1e-9, abs=1e-12)
        assert found.total == len(expected)


QUERY = st.lists(st.sampled_from([*WORDS, "Ana", "Bo", "now", "latest", "unseen"]),
                 min_size=1, max_size=5).map(" ".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(st.integers(1, 60), st.integers(0, 10_000), st.lists(QUERY, min_size=1, max_size=4),
       st.sampled_from(PRIORS))
def test_the_store_ranks_exactly_like_bm25index_and_the_same_priors(
        new_target, size, seed, queries, priors):
    store = RecallStore(new_target(), priors=priors)
    messages = [store.add(message) for message in _conversation(random.Random(seed), size)]
    for query in queries:
        _assert_pages_equal(store, _reference(messages, query, priors), query, page_size=7)


def test_pages_past_the_reranked_pool_follow_bm25s_order_exactly(new_target):
    """Past `POOL` hits the pruned top-k of the backend takes over: still one list."""
    store = RecallStore(new_target())
    messages = [store.add(m) for m in _conversation(random.Random(7), 400)]
    for query in ("trip dog Lisbon", "Ana painting job now", "Porto class"):
        expected = _reference(messages, query, Priors())
        assert len(expected) > POOL + 50, "the test needs more hits than the pool"
        _assert_pages_equal(store, expected, query, page_size=30)


@pytest.mark.parametrize("scope", [None, {"user_id": "ana"}])
def test_excluded_messages_leave_the_ranking_as_if_they_were_never_hits(new_target, scope):
    store = RecallStore(new_target(), scope=scope,
                        priors=Priors(sitting=0.0, speaker=0.0, opening=0.0))
    for message in _conversation(random.Random(3), POOL):
        store.add(message)
    full = store.search("trip dog Lisbon", page_size=POOL)
    assert 20 < full.total <= POOL  # all in the reranked pool, with and without exclusions
    dropped = set(full.ids[::7])
    kept = store.search("trip dog Lisbon", page_size=POOL, exclude=dropped)
    assert kept.total == full.total - len(dropped)
    assert [(hit.record.id, hit.score) for hit in kept] == \
        [(hit.record.id, hit.score) for hit in full if hit.record.id not in dropped]


def test_a_default_store_adds_the_sitting_and_the_named_speaker_to_bm25():
    store = RecallStore()
    ana = store.add(Message(role="user", name="Ana", content="our trip to Porto",
                            created_at=START))
    store.add(Message(role="user", name="Bo", content="the trip was long",
                      created_at=START + timedelta(minutes=1)))
    page = store.search("Ana trip")
    assert page.ids[0] == ana.id
    assert SPEAKER in page.hits[0].terms and SITTING in page.hits[0].terms
    assert SPEAKER not in page.hits[1].terms


def test_a_reply_that_matches_only_through_its_prompt_ranks_below_one_that_says_it():
    """Melanie's "that looks amazing" is indexed with Caroline's "my new painting" but is
    not about Melanie's painting; her own "I painted a horse" (in another sitting) is."""
    store = RecallStore(priors=Priors(sitting=0.0, opening=0.0))
    store.add(Message(role="user", name="Caroline", content="Here is my new painting",
                      created_at=START))
    echo = store.add(Message(role="user", name="Melanie", content="Wow, that looks amazing",
                             created_at=START + timedelta(minutes=1)))
    store.add(Message(role="user", name="Caroline", content="How are the kids?",
                      created_at=START + timedelta(days=3)))
    own = store.add(Message(role="user", name="Melanie",
                            content="They are great. I painted a horse last week, a big one",
                            created_at=START + timedelta(days=3, minutes=1)))
    page = store.search("What has Melanie painted?")
    assert page.ids[:2] == [own.id, echo.id]
    assert page.hits[1].terms[PROMPT_ONLY] < -0.2 * page.hits[1].terms["paint"]
    assert page.hits[0].terms.get(PROMPT_ONLY, 0.0) > -1e-3  # only the name is not its own
    plain = RecallStore(priors=Priors(sitting=0.0, opening=0.0, prompt_only=0.0))
    for message in store.backend.messages(Filter()):
        plain.add(replace(message, id=None))
    assert plain.search("What has Melanie painted?").ids[0] == echo.id  # longer own text


def test_the_first_messages_of_a_sitting_get_the_opening_part(new_target):
    """What happened since the last talk is told first: "Hey! I went camping" opens a
    sitting; the same words later in it get less."""
    store = RecallStore(new_target(), priors=Priors(sitting=0.0, speaker=0.0,
                                                    prompt_only=0.0))
    said = [store.add(Message(role="user", content=text, created_at=START + gap))
            for text, gap in (("Hey! We went camping", timedelta(0)),
                              ("The kids loved it", timedelta(seconds=30)),
                              ("Nice!", timedelta(minutes=1)),
                              ("We went camping again", timedelta(minutes=2)),
                              ("Back home, we went camping", timedelta(days=2)))]
    page = store.search("camping")
    parts = {hit.record.id: hit.terms[OPENING] for hit in page.hits}
    assert parts[said[0].id] == parts[said[4].id] > parts[said[1].id] > parts[said[3].id] > 0
    assert page.ids[0] == said[0].id
    assert [sitting_place(m.created_at, [e.created_at for e in said[:i][::-1]])
            for i, m in enumerate(said)] == [0, 1, 2, 3, 0]
    assert sitting_places(said) == {m.id: p for m, p in zip(said, [0, 1, 2, 3, 0], strict=True)}


def test_a_message_without_content_is_never_a_hit_even_for_its_date():
    store = RecallStore()
    said = store.add(Message(role="user", content="We planted the beans",
                             created_at=START))
    calling = store.add(Message(role="assistant", content="", created_at=START,
                                tool_calls=[{"id": "c1", "type": "function", "function": {
                                    "name": "archival_memory_search", "arguments": "{}"}}]))
    found = store.search("what happened on 1 March 2024").ids
    assert said.id in found and calling.id not in found


def test_rerank_orders_a_hit_without_a_time_as_the_oldest():
    timed = Message(role="user", content="Maya moved to Lisbon", id=2, created_at=START)
    untimed = Message(role="user", content="Maya lives in Porto", id=1)
    hits = [Hit(untimed, 1.0, {"maya": 1.0}), Hit(timed, 0.9, {"maya": 0.9})]
    ordered = rerank(hits, "Where does Maya live now?", Priors(sitting=0.0, speaker=0.0))
    assert [hit.record.id for hit in ordered] == [2, 1]
    assert ordered[1].note == "older than message 2"


def test_recall_indexes_the_prompt_the_name_and_the_date_words():
    first = Message(role="user", name="Ana", content="Where did you go?", created_at=START)
    reply = Message(role="assistant", name="Bo", content="To the coast.",
                    created_at=START + timedelta(minutes=2))
    later = Message(role="user", content="Hello", created_at=START + timedelta(hours=2))
    assert analyze(recall_document(reply, first)) == ["go", "bo", "coast", "1", "march", "2024"]
    assert "go" not in analyze(recall_document(later, reply))  # another sitting: no prompt


def test_a_question_about_the_present_puts_the_newest_fact_first_and_marks_the_older():
    with Memory.open(":memory:") as memory:
        for day, text in enumerate(["I moved to Porto last year", "Lovely weather today",
                                    "Actually I moved to Lisbon in March"]):
            memory.context.append(Message(role="user", content=text,
                                          created_at=START + timedelta(days=day)))
        memory.context.append(Message(role="user", content="Where do I live now?",
                                      created_at=START + timedelta(days=5), session_id=1,
                                      turn=4))
        tools = MemoryTools(memory.context, memory.recall, memory.archival)
        tools.session_id, tools.turn = 1, 4  # as the agent sets them for the turn
        result = tools.call("conversation_search", '{"query": "Where do I live now?"}').content
    lines = result.splitlines()
    lisbon = next(i for i, line in enumerate(lines) if "Lisbon" in line)
    porto = next(i for i, line in enumerate(lines) if "Porto" in line)
    assert lisbon < porto and "older than message 3" in lines[porto]
    assert "user: Where do I live now?" not in result  # the question does not find itself


def test_the_newest_fact_must_be_about_the_question_not_anybody_who_moved():
    clock = iter(START + timedelta(days=day) for day in range(20))
    store = ArchivalStore(clock=lambda: next(clock))
    for fact in ("The tomatoes split", "Oona has a greenhouse", "The slugs ate the lettuce",
                 "Ivo prunes the apple tree", "The compost is warm", "Rain came on Sunday"):
        store.insert(fact)  # enough records that no word is in half of them
    store.insert("Maya lives in Porto")
    lisbon = store.insert("Maya moved to Lisbon")
    store.insert("Bo moved to Oslo")  # the newest change, but not Maya's
    store.insert("Bo started a new job")
    page = store.search("Where does Maya live now?")
    assert page.ids[0] == lisbon
    assert all("Bo" not in hit.record.text for hit in page.hits if hit.note)


def test_without_the_present_tense_the_order_is_bm25s():
    store = RecallStore()
    old = store.add(Message(role="user", content="I moved to Porto", created_at=START))
    store.add(Message(role="user", content="I moved to Lisbon",
                      created_at=START + timedelta(days=9)))
    assert store.search("where did I move")[0].record.id == old.id  # a tie: oldest first
    assert store.search("where did I move")[0].note is None


def test_archival_reads_the_present_tense_too_and_stays_plain_bm25_otherwise():
    clock = iter(START + timedelta(days=day) for day in range(3))
    store = ArchivalStore(clock=lambda: next(clock))
    porto = store.insert("Maya lives in Porto")
    lisbon = store.insert("Maya moved to Lisbon, where she lives")
    assert store.search("where does Maya live now").ids[0] == lisbon
    index = BM25Index(idf="fts5")
    for record_id, text in ((porto, "Maya lives in Porto"),
                            (lisbon, "Maya moved to Lisbon, where she lives")):
        index.add(record_id, text)
    assert store.search("Maya Porto").ids == [doc for doc, _ in index.search("Maya Porto")]


def test_a_query_of_common_words_only_says_why_it_finds_nothing():
    store = RecallStore()
    store.add(Message(role="user", content="who are you", created_at=START))
    page = store.search("who are you?")
    assert page.total == 0 and "common" in page.note


def test_an_index_built_by_an_older_analyzer_is_rebuilt_when_opened(tmp_path):
    path = tmp_path / "agent.db"
    with Memory.open(path) as memory:
        memory.context.append(Message(role="user", name="Ana", content="I painted dogs",
                                      created_at=START))
        memory.archival.insert("Ana paints dogs")
        conn = memory.backend.conn
        with conn:  # what version 1 wrote: the words of the text, unanalysed
            conn.execute("UPDATE index_state SET version = 1")
            for table, column, source in (("messages_fts", "content", "messages"),
                                          ("archival_fts", "text", "archival")):
                for rowid, text in conn.execute(f"SELECT id, {column} FROM {source}").fetchall():
                    conn.execute(f"UPDATE {table} SET terms = ? WHERE rowid = ?",
                                 (" ".join(tokenize(text)), rowid))
        assert memory.recall.search("painting dog").total == 0  # stale: nothing matches
    with Memory.open(path) as memory:
        assert memory.backend.conn.execute("SELECT version FROM index_state").fetchone() == (
            INDEX_VERSION,)
        assert memory.recall.search("painting dog").total == 1
        assert memory.archival.search("painting dog").total == 1


def test_an_open_waits_for_another_processs_reindex_past_the_busy_timeout(tmp_path):
    """A second process opening a file that another is re-indexing (one long write
    transaction, longer than SQLite's busy timeout) waits for it instead of failing."""
    path = tmp_path / "agent.db"
    RecallStore(path).backend.close()
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("UPDATE index_state SET version = 1")
    other.execute("BEGIN IMMEDIATE")  # the other process's re-index, under way

    def finish() -> None:
        time.sleep(BUSY_TIMEOUT_MS / 1000 + 1)
        other.execute("UPDATE index_state SET version = ?", (INDEX_VERSION,))
        other.execute("COMMIT")
    worker = threading.Thread(target=finish)
    worker.start()
    store = RecallStore(path)  # raised "database is locked" after 5 s before
    worker.join()
    assert store.backend.conn.execute("SELECT version FROM index_state").fetchone() == (
        INDEX_VERSION,)
    store.close()
    other.close()


def test_postgres_rebuilds_an_index_built_by_an_older_analyzer(postgres_url):
    with Memory.open(postgres_url) as memory:
        memory.context.append(Message(role="user", name="Ana", content="I painted dogs",
                                      created_at=START))
        memory.archival.insert("Ana paints dogs")
        conn = memory.backend.conn
        with conn.transaction():  # what version 1 wrote: the words of the text, unanalysed
            conn.execute("UPDATE vmem_meta SET value = '1' WHERE key = 'index_version'")
            for table in ("messages_postings", "archival_postings"):
                conn.execute(f"UPDATE {table} SET term = upper(term)")
    with Memory.open(postgres_url) as memory:
        version = memory.backend.conn.execute(
            "SELECT value FROM vmem_meta WHERE key = 'index_version'").fetchone()
        assert version == (str(INDEX_VERSION),)
        assert memory.recall.search("painting dog").total == 1
        assert memory.archival.search("painting dog").total == 1
        check_index(memory.backend)


def test_a_copy_indexes_each_message_after_the_one_before_it_in_the_source(tmp_path):
    """Even when ids are renumbered (the destination already uses some), and whatever the
    messages' time zone: the copy's documents are the source's."""
    source = RecallStore(tmp_path / "source.db", scope={"user_id": "ana"})
    new_york = timezone(timedelta(hours=-5))
    for minute, text in enumerate(["alpha", "bravo", "charlie", "delta", "echo"]):
        source.add(Message(role="user", content=f"{text} trip",
                           created_at=datetime(2023, 5, 8, 23, 30 + minute, tzinfo=new_york)))
    destination = RecallStore(tmp_path / "destination.db", scope={"user_id": "bob"})
    for message_id in (2, 100):
        destination.add(Message(id=message_id, role="user", content="bob's note",
                                created_at=START))
    report = copy_agents(source.backend, destination.backend)
    assert report.renumbered  # message 2 took a new id

    def documents(store: RecallStore) -> dict[str, str]:
        rows = store.backend.conn.execute(
            "SELECT m.content, f.terms FROM messages AS m JOIN messages_fts AS f "
            "ON f.rowid = m.id WHERE m.scope LIKE '%ana%'").fetchall()
        return dict(rows)
    assert documents(destination) == documents(source)
    assert "9 may 2023" in " ".join(documents(source).values())  # the UTC date


@given(st.text(max_size=80))
def test_the_analyzer_gives_the_same_terms_when_run_on_its_own_output(text):
    terms = analyze(text)
    assert analyze(" ".join(terms)) == terms
    assert not STOPWORDS & set(terms)


@pytest.mark.parametrize(("words", "shared"), [
    (("painting", "painted", "paints", "paint"), "paint"),
    (("move", "moved", "moves", "moving"), "mov"),
    (("hobbies", "hobby"), "hobbi"),
    (("classes", "class"), "class"),
    (("study", "studies", "studied"), "studi"),
    (("movie", "movies"), "movi"),
    (("agree", "agreed", "agrees"), "agr"),
])
def test_inflections_share_a_stem(words, shared):
    assert {stem(word) for word in words} == {shared}


@given(st.text(max_size=80) | st.lists(st.sampled_from(WORDS + ["studies", "İstanbul",
                                                                 "cafe\u0301s", "running"]),
                                       max_size=8).map(" ".join),
       st.lists(st.sampled_from(WORDS + ["studies", "ran", "café", "istanbul"]), max_size=6))
def test_the_quick_own_word_check_finds_what_the_analyzer_finds(content, words):
    from vmem.ranking import _own_terms  # noqa: PLC0415 - a private shortcut, checked

    terms = analyze(" ".join(words)) + analyze(content)[:3]
    assert _own_terms(content, terms) == set(terms) & set(analyze(content))


ASSISTANT_ECHO = ("Great plan. Your first sprint ends on March 29. Before the sprint ends, list "
                  "what the sprint should deliver; a first sprint that ends with a demo helps. "
                  "Sprint reviews work best when the sprint ends on time and the team agrees "
                  "on scope.")


def _sprint_chat(priors: Priors) -> tuple[RecallStore, Message, Message]:
    """A user and an assistant: small talk, then the user's plan and the assistant's long
    answer that repeats its words (BEAM's shape: the user's turn is the evidence)."""
    store, moment = RecallStore(priors=priors), START
    for i, text in enumerate(["Can you suggest a name for my cat?", "Try Pixel or Miso.",
                              "What should I cook tonight?", "A pasta with tomatoes.",
                              "How do I water tomatoes?", "Deeply, twice a week."]):
        store.add(Message(role=("user", "assistant")[i % 2], content=text, created_at=moment))
        moment += timedelta(days=1)
    said = store.add(Message(role="user", content="My first sprint ends on March 29.",
                             created_at=moment))
    answer = store.add(Message(role="assistant", content=ASSISTANT_ECHO,
                               created_at=moment + timedelta(seconds=1)))
    return store, said, answer


def test_a_question_in_the_first_person_finds_what_the_user_said_over_the_echo():
    store, said, answer = _sprint_chat(Priors())
    page = store.search("When does my first sprint end?")
    assert page.ids[:2] == [said.id, answer.id]
    assert SPEAKER in page.hits[0].terms and SPEAKER not in page.hits[1].terms
    # the echo says the words more often: without the prior, plain BM25 puts it first
    plain, said, answer = _sprint_chat(Priors(speaker=0.0))
    assert plain.search("When does my first sprint end?").ids[:2] == [answer.id, said.id]


def test_a_question_not_in_the_first_person_gives_the_user_no_speaker_part():
    store, _, _ = _sprint_chat(Priors())
    assert all(SPEAKER not in hit.terms for hit in store.search("first sprint end").hits)


def test_a_short_prompt_is_indexed_with_its_reply_and_a_long_one_is_not():
    prompt = Message(role="user", content="Which tent should I take camping?",
                     created_at=START)
    reply = Message(role="assistant", content="The light one.",
                    created_at=START + timedelta(seconds=5))
    assert "tent" in analyze(recall_document(reply, prompt))
    long_prompt = replace(prompt, content="Which tent should I take camping? " + " ".join(
        f"detail{i}" for i in range(PROMPT_TERMS)))
    assert len(analyze(long_prompt.content)) > PROMPT_TERMS
    assert "tent" not in analyze(recall_document(reply, long_prompt))
    exactly = replace(prompt, content=" ".join(f"word{i}" for i in range(PROMPT_TERMS)))
    assert "word0" in analyze(recall_document(reply, exactly))


def test_sitting_places_stay_right_after_more_messages_arrive(tmp_path):
    """Places are kept between searches; appending (a new sitting, more of the old one)
    leaves every hit's opening part what a store built at once from the same messages
    gives."""
    store = RecallStore(tmp_path / "kept.db")
    moment = START
    for day in range(3):
        for minute in range(4):
            store.add(Message(role=("user", "assistant")[minute % 2],
                              content=f"camping note {day} {minute}",
                              created_at=moment + timedelta(days=day, minutes=minute)))
    store.search("camping")
    for minute in range(4, 7):
        store.add(Message(role="user", content=f"camping note 2 {minute}",
                          created_at=moment + timedelta(days=2, minutes=minute)))
    store.add(Message(role="user", content="camping again", created_at=moment +
                      timedelta(days=5)))
    fresh = RecallStore(tmp_path / "fresh.db")
    for message in store.backend.messages(Filter()):
        fresh.add(replace(message, id=None))
    for query in ("camping", "camping note", "camping again"):
        kept, built = store.search(query, top_k=20), fresh.search(query, top_k=20)
        assert kept.ids == built.ids
        assert [hit.terms for hit in kept.hits] == [hit.terms for hit in built.hits]
