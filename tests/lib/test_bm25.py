"""BM25 from scratch: the analyzer, the three IDF variants, explain, incremental updates,
and agreement with the real rank-bm25 package."""

from __future__ import annotations

import math
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmem.bm25 import BM25Index, analyze, tokenize
from vmem.errors import StoreError

# --- tokenize ---------------------------------------------------------------------


def test_tokenize_lowercases_and_splits_on_non_alphanumerics():
    assert tokenize("Hello, WORLD: it's 2024! snake_case e-mail") == [
        "hello", "world", "it", "s", "2024", "snake", "case", "e", "mail"]


@given(st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=60)
       | st.sampled_from(["\u212a9 Kelvin", "\ufb01ne", "Stra\u00dfe", "caf\u00e9"]))
def test_tokenize_splits_ascii_text_as_the_unicode_pattern_does(text):
    from vmem.bm25 import _token_pattern  # noqa: PLC0415 - the slow path, compared

    slow = _token_pattern().findall(unicodedata.normalize("NFC", text.casefold()))
    assert tokenize(text) == slow


def test_tokenize_of_nothing_searchable_is_empty():
    assert tokenize("") == []
    assert tokenize("  ?! -- () \"\" 🙂🎉 ___ ") == []


def test_accents_are_kept_and_combining_forms_equal_precomposed():
    decomposed = "Cafe\u0301"  # e + combining acute accent
    assert tokenize(decomposed) == tokenize("café") == ["café"]
    assert tokenize("café") != tokenize("cafe")


def test_combining_marks_stay_inside_the_word():
    # Devanagari vowel signs and virama are combining marks: the word must not be cut.
    assert tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]


def test_cjk_characters_are_terms_of_their_own_and_do_not_vanish():
    assert tokenize("我喜欢猫 and カタカナ") == [
        "我", "喜", "欢", "猫", "and", "カ", "タ", "カ", "ナ"]
    assert tokenize("한국어 단어") == ["한국어", "단어"]


def test_case_folding_handles_final_sigma_and_sharp_s():
    assert tokenize("ΟΔΟΣ") == tokenize("οδος") == tokenize("οδοσ")
    assert tokenize("STRASSE") == tokenize("Straße")


def test_dotted_capital_i_keeps_its_dot_as_a_combining_mark():
    assert tokenize("İstanbul") == ["i\u0307stanbul"]


# --- scoring by hand ----------------------------------------------------------------

CORPUS = {1: "a b", 2: "a c c", 3: "d"}  # lengths 2, 3, 1: avgdl 2


def test_the_default_analyzer_is_the_stores_and_tokenize_gives_textbook_bm25():
    """By default `BM25Index` indexes like the stores (`analyze`); the textbook BM25 of
    lesson 03, where every word counts, is `analyzer=tokenize`."""
    stores, textbook = BM25Index(), BM25Index(analyzer=tokenize)
    assert stores.analyzer is analyze and textbook.analyzer is tokenize
    for index in (stores, textbook):
        index.add(1, "The cats are painting")
    assert [term.term for term in stores.explain("the painted cats", 1).terms] == ["paint", "cat"]
    assert (stores.avgdl, textbook.avgdl) == (2.0, 4.0)
    assert set(stores.scores("painted")) == {1} and textbook.scores("painted") == {}
    assert [term.term for term in textbook.explain("the cats", 1).terms] == ["the", "cats"]


def test_explain_matches_the_formula_computed_by_hand():
    index = BM25Index(k1=1.2, b=0.75, analyzer=tokenize)
    for doc_id, text in CORPUS.items():
        index.add(doc_id, text)
    explanation = index.explain("c a", 2)
    idf_c = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    idf_a = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    norm = 1 - 0.75 + 0.75 * 3 / 2
    expected_c = idf_c * 2 * 2.2 / (2 + 1.2 * norm)
    expected_a = idf_a * 1 * 2.2 / (1 + 1.2 * norm)
    c, a = explanation.terms
    assert (c.term, c.tf, c.df, a.term, a.tf, a.df) == ("c", 2, 1, "a", 1, 2)
    assert c.idf == pytest.approx(idf_c) and a.idf == pytest.approx(idf_a)
    assert c.norm == pytest.approx(norm)
    assert c.contribution == pytest.approx(expected_c)
    assert a.contribution == pytest.approx(expected_a)
    assert explanation.score == pytest.approx(expected_c + expected_a)
    assert explanation.score == pytest.approx(index.scores("c a")[2])
    assert (explanation.doc_len, explanation.avgdl) == (3, 2.0)
    assert "contrib" in str(explanation)


def test_fts5_idf_floors_at_one_millionth_and_lucene_never_negative():
    texts = {1: "a", 2: "a", 3: "a b"}
    fts5 = BM25Index(idf="fts5", analyzer=tokenize)
    lucene = BM25Index(idf="lucene", analyzer=tokenize)
    for doc_id, text in texts.items():
        fts5.add(doc_id, text)
        lucene.add(doc_id, text)
    assert fts5.idf("a") == 1e-6  # ln(0.5 / 3.5) < 0
    assert fts5.idf("b") == pytest.approx(math.log(2.5 / 1.5))
    assert lucene.idf("a") == pytest.approx(math.log(1 + 0.5 / 3.5)) and lucene.idf("a") > 0


def test_okapi_term_in_half_the_documents_scores_zero():
    index = BM25Index(idf="okapi", analyzer=tokenize)
    for doc_id, text in {1: "x y", 2: "x z", 3: "w", 4: "v"}.items():
        index.add(doc_id, text)
    assert index.idf("x") == 0.0
    assert index.scores("x") == {1: 0.0, 2: 0.0}


def test_okapi_negative_idf_floor_can_itself_be_negative():
    # Every document contains "a": all idfs are negative, and so is their mean.
    index = BM25Index(idf="okapi", epsilon=0.25, analyzer=tokenize)
    for doc_id, text in {1: "a b", 2: "a b", 3: "a c"}.items():
        index.add(doc_id, text)
    raw_a = math.log(0.5) - math.log(3.5)
    raw_b = math.log(1.5) - math.log(2.5)
    raw_c = math.log(2.5) - math.log(1.5)
    floor = 0.25 * (raw_a + raw_b + raw_c) / 3
    assert floor < 0
    assert index.idf("a") == pytest.approx(floor)
    assert index.idf("c") == pytest.approx(raw_c)
    assert all(score < 0 for score in index.scores("a").values())


def test_repeated_query_word_counts_each_time():
    index = BM25Index(analyzer=tokenize)
    for doc_id, text in CORPUS.items():
        index.add(doc_id, text)
    assert index.scores("c c c")[2] == pytest.approx(3 * index.scores("c")[2])


def test_ties_break_by_insertion_order_and_only_matching_docs_rank():
    index = BM25Index()
    for doc_id in (5, 2, 9):
        index.add(doc_id, "same words here")
    index.add(7, "other text")
    assert [doc for doc, _ in index.search("words", k=10)] == [5, 2, 9]
    index.remove(5)
    index.add(5, "same words here")  # re-added: now the newest
    assert [doc for doc, _ in index.search("words", k=2)] == [2, 9]
    assert [doc for doc, _ in index.search("words", k=10)] == [2, 9, 5]


def test_errors_for_unknown_or_duplicate_documents_and_bad_variant():
    index = BM25Index()
    index.add("a", "text")
    with pytest.raises(StoreError, match="already indexed"):
        index.add("a", "again")
    with pytest.raises(StoreError, match="no document"):
        index.remove("b")
    with pytest.raises(StoreError, match="no document"):
        index.explain("text", "b")
    with pytest.raises(ValueError, match="lucene, okapi, fts5"):
        BM25Index(idf="tfidf")


def test_empty_index_and_query_without_words():
    index = BM25Index()
    assert index.search("anything") == [] and index.avgdl == 0.0
    index.add(1, "words")
    assert index.scores("?!") == {}


# --- incremental updates equal a rebuild --------------------------------------------

WORDS = st.sampled_from(["apple", "bread", "cheese", "dates", "eggs", "figs", "grapes"])
DOCS = st.lists(WORDS, min_size=1, max_size=8).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(DOCS, min_size=2, max_size=12), st.data(),
       st.sampled_from(["lucene", "okapi", "fts5"]))
def test_add_and_remove_give_the_same_scores_as_a_rebuild(texts, data, variant):
    index = BM25Index(idf=variant)
    for doc_id, text in enumerate(texts):
        index.add(doc_id, text)
    removed = data.draw(st.sets(st.sampled_from(range(len(texts))), max_size=len(texts) - 1))
    for doc_id in sorted(removed):
        index.remove(doc_id)
    rebuilt = BM25Index(idf=variant)
    for doc_id, text in enumerate(texts):
        if doc_id not in removed:
            rebuilt.add(doc_id, text)
    query = data.draw(st.lists(WORDS, min_size=1, max_size=5).map(" ".join))
    got, want = index.scores(query), rebuilt.scores(query)
    assert list(got) == list(want)
    assert list(got.values()) == pytest.approx(list(want.values()), rel=1e-12, abs=1e-12)
    assert index.search(query) == [(d, pytest.approx(s, rel=1e-12, abs=1e-12))
                                   for d, s in rebuilt.search(query)]


# --- agreement with rank-bm25 --------------------------------------------------------

rank_bm25 = pytest.importorskip("rank_bm25")
TOKENS = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", "x1", "y2"])


def _compare_with_rank_bm25(corpus: list[list[str]], query: list[str]) -> None:
    reference = rank_bm25.BM25Okapi(corpus, k1=1.5, b=0.75, epsilon=0.25)
    expected = reference.get_scores(query)
    index = BM25Index(k1=1.5, b=0.75, idf="okapi", epsilon=0.25, analyzer=tokenize)
    for doc_id, tokens in enumerate(corpus):
        index.add(doc_id, " ".join(tokens))
    got = index.scores(" ".join(query))
    for doc_id, want in enumerate(expected):
        assert got.get(doc_id, 0.0) == pytest.approx(float(want), rel=1e-9, abs=1e-9)
    for doc_id in got:  # only documents holding a query term are ranked
        assert set(query) & set(corpus[doc_id])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(TOKENS, min_size=1, max_size=10), min_size=2, max_size=15),
       st.lists(st.one_of(TOKENS, st.just("unseen")), min_size=1, max_size=6))
def test_okapi_agrees_with_rank_bm25_on_random_corpora(corpus, query):
    _compare_with_rank_bm25(corpus, query)


def test_okapi_agrees_with_rank_bm25_on_tiny_and_half_the_documents_corpora():
    _compare_with_rank_bm25([["a"], ["b"]], ["a", "b", "a"])  # 2 docs, term in half
    _compare_with_rank_bm25([["a", "b"], ["a", "c"], ["d"], ["e"]], ["a", "c"])
    _compare_with_rank_bm25([["a"], ["a"], ["a", "b"]], ["a", "b"])  # negative mean


def test_k1_zero_scores_presence_only_and_explains_missing_terms_as_zero():
    """k1 = 0 turns BM25 into a sum of IDFs of the terms present (a slider can go there)."""
    index = BM25Index(k1=0.0, b=0.75, analyzer=tokenize)
    index.add("a", "red apple red apple")
    index.add("b", "green pear")
    explanation = index.explain("apple pear", "a")
    by_term = {term.term: term.contribution for term in explanation.terms}
    assert by_term["pear"] == 0.0
    assert by_term["apple"] == pytest.approx(index.idf("apple"))
