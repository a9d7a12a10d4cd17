"""What a memory search adds to BM25: what a message is indexed as, and the priors.

BM25 alone ranks each stored text on its own words. A conversation is more than that, and
the stores use what they already hold (docs/RETRIEVAL.md has the measurements, chosen on
LoCoMo conversations 1-5 and BEAM chats 1-10, and reported on LoCoMo 6-10):

- **What a recall message is indexed as** (`recall_document`): the message before it in
  the same sitting when that is short (a reply is often about the question it answers:
  "Researching adoption agencies" answers "What are you up to?"; a long message, such as
  an assistant's answer, stands on its own words and would only smear its topic over the
  user's next request), the speaker's name (questions name people), the message itself,
  its date as words ("8 May 2023"), and the word "asked" when it asks something.
  Archival records are indexed as their text.
- **Priors** that rerank BM25's best `POOL` hits (`rerank`), in BM25 units and shown in
  `Hit.terms` beside the query's words, so the parts still sum to the score:
  - `SITTING` ("(same sitting)"): a share of the scores of the other hits written within
    `SITTING_GAP` of it. Evidence comes in runs: a day's talk about a trip holds several
    hits, a stray match on a common word holds one.
  - `SPEAKER` ("(speaker)"): a share when the query names the message's sender: by
    name, or for the user's own messages by speaking as the user ("when does *my* sprint
    end?", `FIRST_PERSON`). A user asking an assistant about what they said is the
    MemGPT setting; the assistant's long answer that repeats their words is not the
    evidence.
  Both are `weight x best BM25 score of the pool x a number from 0 to 1`, so they move a
  hit only past hits that score about as well.
- Two more parts on the scores those give (issue 14's multi-hop questions, "what
  activities does Melanie do?", whose evidence is scattered over many sittings):
  - `PROMPT_ONLY` ("(prompt's words)", negative): a reply is indexed with the prompt it
    answers, but a hit whose matched words are only the prompt's is about what the other
    person said; it loses `weight x its score x the share of its BM25 parts whose words
    its own content lacks`.
  - `OPENING` ("(opens sitting)"): `weight x the best score x (1 - place / OPENING_SPAN)`
    for the first messages of a sitting (`sitting_place`: 0 for the first), where people
    tell what happened since they last talked. The store gives each hit's place
    (`Backend.preceding_times`); it is not a function of the hits alone.
- **Questions about the present** ("where does she live now?", "still", "latest",
  `asks_current_state`): the query also matches words of change ("moved", "started",
  `CHANGE_WORDS`), and among the hits that score at least `CURRENT_SHARE` of the best
  and match a word of the question itself (when any does), the newest comes first and
  each older one says so (`Hit.note`).

The priors are a function of the hits (their scores, terms, contents, times and senders)
and of each hit's place in its sitting, so the store's path (FTS5 or PostgreSQL) and a
`BM25Index(idf="fts5")` over the same documents, with `sitting_places` over the same
messages, give the same page: `tests/lib/test_ranking.py` proves it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from functools import cache, lru_cache

from .bm25 import STOPWORDS, analyze, stem, tokenize
from .messages import Hit, Message

SEARCHABLE_ROLES = ("user", "assistant")
"""The roles recall indexes: tool results and system notices are never worth paging in."""
INDEX_VERSION = 3
"""What a stored index was built with: 1, the words (`tokenize`) of the text alone; 2,
`analyze`d `recall_document`s and texts; 3, the same with only a short previous message
(`PROMPT_TERMS`) in a recall document. A store built with an older version is indexed
again when it is opened (`recall_documents`)."""
PROMPT_TERMS = 30
"""A previous message of at most this many analysed terms is indexed with the reply to
it (LoCoMo's turns are a median 10; a user's request to an assistant in BEAM 21, the
assistant's answer 357)."""
POOL = 60
"""How many of BM25's best hits the priors rerank; later hits follow in BM25's order.
Loading and reranking them is most of what recall search costs over archival search;
`benchmarks/recall_pool.py` prints the trade (60 was chosen on the dev splits: as good as
100 there, and faster; docs/RETRIEVAL.md)."""
SITTING_GAP = timedelta(minutes=30)
"""Messages this close in time belong to one sitting (a chat, a LoCoMo session)."""
SITTING = "(same sitting)"
SPEAKER = "(speaker)"
PROMPT_ONLY = "(prompt's words)"
OPENING = "(opens sitting)"
OPENING_SPAN = 8
"""A message this far into its sitting (`sitting_place`) or later gets no `OPENING` part;
the store looks back at most this many messages."""
ASKED = "asked"
"""Indexed with every question or request: the words of "what did I ask you?" are all
stop words but this one."""
REQUEST_OPENERS = frozenset({"please", "could", "can", "would", "will", "help", "find"})
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
"""A query with one of these words speaks as the user, and so names the user's messages."""
CURRENT_SHARE = 0.5
"""On a question about the present, hits scoring at least this share of the best are
ordered newest first."""
CURRENT_WORDS = frozenset({"now", "still", "latest", "currently", "current", "anymore",
                           "nowadays", "presently"})
CHANGE_WORDS = "moved relocated switched changed started joined quit left"
"""Words of change a question about the present also matches ("she moved to Porto")."""


@dataclass(frozen=True)
class Priors:
    """The weights of the priors (0 turns one off) and whether questions about the
    present are read as such. The defaults are what docs/RETRIEVAL.md measured."""

    sitting: float = 0.3
    speaker: float = 0.3
    current_state: bool = True
    prompt_only: float = 0.3
    opening: float = 0.1


def same_sitting(earlier: datetime | None, later: datetime | None) -> bool:
    """Whether two messages' times are within `SITTING_GAP` of each other."""
    return earlier is not None and later is not None and abs(later - earlier) <= SITTING_GAP


def sitting_place(moment: datetime | None, earlier: Sequence[datetime | None]) -> int | None:
    """How many messages came before a message (written at `moment`) in its sitting, up to
    `OPENING_SPAN`: `earlier` are the times of the searchable messages stored before it in
    its scope, newest first (at least `OPENING_SPAN` of them when there are that many).
    None for a message without a time."""
    if moment is None:
        return None
    place = 0
    for before in earlier[:OPENING_SPAN]:
        if not same_sitting(before, moment):
            break
        place, moment = place + 1, before
    return place


def sitting_places(messages: Iterable[Message]) -> dict[int, int | None]:
    """`sitting_place` of each of `messages` (searchable ones of one scope, oldest first)
    by id: what `Backend.preceding_times` lets a store compute for its hits."""
    places: dict[int, int | None] = {}
    times: list[datetime | None] = []
    for message in messages:
        if message.id is not None:
            places[message.id] = sitting_place(message.created_at, times[::-1])
        times = [*times[-OPENING_SPAN + 1:], message.created_at]
    return places


def date_words(moment: datetime) -> str:
    """"8 May 2023": a date as a question would write it (day without a leading zero)."""
    return f"{moment.day} {moment:%B} {moment.year}"


def is_request(text: str) -> bool:
    """Whether `text` asks something: a question, or a request ("can you ...", "please")."""
    words = tokenize(text[:200])
    return text.rstrip().endswith("?") or bool(words) and words[0] in REQUEST_OPENERS


def recall_document(message: Message, previous: Message | None) -> str:
    """The text recall indexes for `message`: `previous` (the prompt it answers, when it
    is of the same sitting and at most `PROMPT_TERMS` terms), the sender's name, the
    content, the date as words, and `ASKED` when the message asks something (so "what
    did I ask you?" finds it); nothing for a message without content (an assistant's
    turn that only calls tools)."""
    if not message.content.strip():
        return ""  # a tool call's turn: indexed, but with no terms to match
    parts = []
    if previous is not None and same_sitting(previous.created_at, message.created_at) \
            and _is_short(previous.content):
        parts.append(previous.content)
    if message.name:
        parts.append(message.name)
    parts.append(message.content)
    if message.created_at is not None:
        parts.append(date_words(message.created_at))
    if is_request(message.content):
        parts.append(ASKED)
    return "\n".join(parts)


def _is_short(text: str) -> bool:
    """Whether `text` has at most `PROMPT_TERMS` analysed terms (only its start is
    analysed when that already has more: an assistant's answer can be long)."""
    head = text[:PROMPT_TERMS * 40]
    return len(analyze(head)) <= PROMPT_TERMS and (
        head == text or len(analyze(text)) <= PROMPT_TERMS)


def recall_documents(stored: Iterable[tuple[Message, str]]) -> Iterator[tuple[int, str]]:
    """(id, document) for each searchable message of `stored`, given as (message, its
    stored scope as text) in id order: each is indexed after the one before it in its own
    scope, as `vmem.recall.RecallStore.add` indexed it."""
    latest: dict[str, Message] = {}
    for message, scope in stored:
        if message.role in SEARCHABLE_ROLES and message.id is not None:
            yield message.id, recall_document(message, latest.get(scope))
            latest[scope] = message


def indexed_texts(records: Iterable[tuple[int, str]], messages: Iterable[tuple[Message, str]]
                  ) -> Iterator[tuple[str, int, str]]:
    """(tier, id, text to index) for every record (id, text) and searchable message
    (`recall_documents`' input): what a store indexes again after an analyzer change."""
    for record_id, text in records:
        yield "archival", record_id, text
    for message_id, document in recall_documents(messages):
        yield "recall", message_id, document


def asks_current_state(query: str) -> bool:
    """Whether `query` asks how things are now ("now", "still", "latest", ...)."""
    return any(word in CURRENT_WORDS for word in tokenize(query))


def query_terms(query: str, priors: Priors | None = None) -> list[str]:
    """The analysed terms a search ranks `query` by; a question about the present also
    gets the words of change it does not already have."""
    terms = analyze(query)
    if terms and (priors or Priors()).current_state and asks_current_state(query):
        terms += [term for term in _change_terms() if term not in terms]
    return terms


@cache
def _change_terms() -> tuple[str, ...]:
    """`CHANGE_WORDS` analysed, once (analysing builds the word pattern on first use)."""
    return tuple(dict.fromkeys(analyze(CHANGE_WORDS)))


def rerank(hits: Sequence[Hit], query: str, priors: Priors | None = None,
           places: Mapping[int, int | None] | None = None) -> list[Hit]:
    """BM25's best hits (best first) reordered by the priors, each hit's added parts in
    its `terms`; on a question about the present, the newest of the close hits first.

    `places` maps a message hit's id to its `sitting_place` (None or absent: no `OPENING`
    part); the sitting and speaker parts come first, then the prompt's-words and opening
    parts on the scores they give.
    """
    priors = priors or Priors()
    if not hits:
        return []
    best = max(hit.score for hit in hits)
    named = set(analyze(query))
    as_user = priors.speaker and not FIRST_PERSON.isdisjoint(tokenize(query))
    sitting = _sitting_scores(hits) if priors.sitting else {}
    most = max(sitting.values(), default=0.0)
    senders = {hit.record.name: set(analyze(hit.record.name)) for hit in hits
               if priors.speaker and isinstance(hit.record, Message) and hit.record.name}
    reranked = []
    for position, hit in enumerate(hits):
        added: dict[str, float] = {}
        if most > 0 and sitting[position] > 0:
            added[SITTING] = priors.sitting * best * sitting[position] / most
        sender = senders.get(getattr(hit.record, "name", None))
        if (sender and sender <= named) or (as_user and _from_user(hit)):
            added[SPEAKER] = priors.speaker * best
        reranked.append(_with_parts(hit, added))
    if priors.prompt_only or (priors.opening and places):
        reranked = _own_words_and_openings(reranked, priors, places or {})
    order = sorted(range(len(hits)), key=lambda i: (-reranked[i].score, hits[i].record.id))
    ordered = [reranked[i] for i in order]
    if priors.current_state and asks_current_state(query):
        return _newest_first(ordered, named)
    return ordered


def _from_user(hit: Hit) -> bool:
    """Whether a hit is one of the user's own messages."""
    return isinstance(hit.record, Message) and hit.record.role == "user"


def _with_parts(hit: Hit, added: Mapping[str, float]) -> Hit:
    """`hit` with the `added` parts in its score and its `terms` (itself when none)."""
    if not added:
        return hit
    return replace(hit, score=hit.score + sum(added.values()), terms={**hit.terms, **added})


def _own_words_and_openings(hits: list[Hit], priors: Priors,
                            places: Mapping[int, int | None]) -> list[Hit]:
    """`hits` (scored by BM25 and the sitting and speaker parts) with the `PROMPT_ONLY`
    and `OPENING` parts added to each message hit."""
    best = max(hit.score for hit in hits)
    words = _words_like(tuple(sorted({term for hit in hits for term in hit.terms
                                      if not term.startswith("(")})))
    result = []
    for hit in hits:
        if not isinstance(hit.record, Message):
            result.append(hit)
            continue
        added: dict[str, float] = {}
        lacking = _prompt_share(hit, words) if priors.prompt_only else 0.0
        if lacking > 0:
            added[PROMPT_ONLY] = -priors.prompt_only * hit.score * lacking
        place = places.get(hit.record.id)
        if priors.opening and place is not None and place < OPENING_SPAN:
            added[OPENING] = priors.opening * best * (1 - place / OPENING_SPAN)
        result.append(_with_parts(hit, added))
    return result


def _prompt_share(hit: Hit, words: re.Pattern[str]) -> float:
    """The share of a message hit's BM25 parts (its matched query words) that come from
    words its own content lacks: words of the prompt it was indexed with, or of its
    date or name. `words` finds the words that may stem to a matched term
    (`_words_like` of every term matched in the pool)."""
    matched = {term: part for term, part in hit.terms.items()
               if not term.startswith("(") and part > 0}
    total = sum(matched.values())
    if total <= 0:
        return 0.0
    own = _own_terms(hit.record.content, matched, words)
    return sum(part for term, part in matched.items() if term not in own) / total


def _own_terms(content: str, terms: Iterable[str], words: re.Pattern[str] | None = None
               ) -> set[str]:
    """Which of the analysed `terms` `analyze(content)` holds, looking only at the words
    that may give one: a stem without its last letter begins the word it came from (the
    stemmer strips suffixes and at most changes the last letter). ASCII text is scanned
    for those words alone (`analyze` splits it on `[a-z0-9]+`; `words`, `_words_like`
    of `terms` or of more terms, saves building the pattern); other text is analysed."""
    folded = content.casefold()
    if not folded.isascii():
        folded = unicodedata.normalize("NFC", folded)
    wanted = {term for term in terms if term[:-1] in folded}
    if not wanted:
        return set()
    if not folded.isascii():
        return wanted & set(analyze(content))
    found = set()
    for word in (words or _words_like(tuple(sorted(wanted)))).findall(folded):
        stemmed = stem(word)
        if stemmed in wanted and word not in STOPWORDS and stemmed not in STOPWORDS:
            found.add(stemmed)
    return found


@lru_cache(maxsize=1024)
def _words_like(terms: tuple[str, ...]) -> re.Pattern[str]:
    """The ASCII words that begin as one of `terms` without its last letter does."""
    heads = "|".join(sorted({re.escape(term[:-1] or term) for term in terms}, key=len,
                            reverse=True))
    return re.compile(rf"(?<![a-z0-9])(?:{heads})[a-z0-9]*")


def _sitting_scores(hits: Sequence[Hit]) -> dict[int, float]:
    """For each hit (by position), the summed scores of the other message hits of its
    sitting; 0 for records and for a hit alone in its sitting."""
    timed = sorted((hit.record.created_at, position) for position, hit in enumerate(hits)
                   if isinstance(hit.record, Message) and hit.record.created_at is not None)
    totals = dict.fromkeys(range(len(hits)), 0.0)
    for i, (moment, position) in enumerate(timed):
        for other_moment, other in timed[i + 1:]:
            if not same_sitting(moment, other_moment):
                break
            totals[position] += hits[other].score
            totals[other] += hits[position].score
    return totals


def _newest_first(ordered: list[Hit], asked: set[str]) -> list[Hit]:
    """The close hits about the question, newest first (each older one noting which is
    newer), then the other hits in their order.

    Close: scoring at least `CURRENT_SHARE` of the best. About the question: matching one
    of its own words (`asked`, not only the words of change added to it), such as the
    person's name, when any close hit does; otherwise, in a large memory, the newest
    statement of anybody who moved would come first. ("Where do I live now?" shares no
    word but "live" with "I moved to Porto": then every close hit counts.)
    """
    cutoff = CURRENT_SHARE * ordered[0].score
    window = [hit for hit in ordered if hit.score >= cutoff]
    close = [hit for hit in window if asked & set(hit.terms)] or window
    if len(close) < 2:
        return ordered
    close.sort(key=_age, reverse=True)
    newest = close[0].record
    kind = "message" if isinstance(newest, Message) else "record"
    marked = [close[0], *(replace(hit, note=f"older than {kind} {newest.id}")
                          for hit in close[1:])]
    kept = {id(hit) for hit in close}
    return marked + [hit for hit in ordered if id(hit) not in kept]


def _age(hit: Hit) -> tuple[datetime, int]:
    """A hit's (time, id) for ordering by age; an unknown time or id counts as oldest."""
    moment, record_id = hit.record.created_at, hit.record.id
    return (moment or datetime.min.replace(tzinfo=timezone.utc),
            -1 if record_id is None else record_id)
