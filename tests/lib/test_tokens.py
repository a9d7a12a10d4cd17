"""Token counting: the word-based default and the offline-capable tiktoken counter."""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import re
import sys

import pytest

from vmem.tokens import ApproxCounter, Counter, TiktokenCounter, count_tokens

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def test_approx_counter_is_ceil_of_words_times_1_3() -> None:
    assert count_tokens("") == 0
    assert count_tokens("   \n\t ") == 0
    assert count_tokens("one") == 2  # ceil(1.3)
    assert count_tokens("one two three") == 4  # ceil(3.9)
    assert count_tokens(" ".join(["w"] * 10)) == 13
    assert count_tokens("a b", ApproxCounter(ratio=2)) == 4


def test_counters_satisfy_the_protocol() -> None:
    assert isinstance(ApproxCounter(), Counter)


@pytest.fixture
def offline_tiktoken(tmp_path, monkeypatch):
    """tiktoken with an empty cache folder, a fresh registry and no way to download."""
    tiktoken_load = pytest.importorskip("tiktoken.load")
    tiktoken_registry = pytest.importorskip("tiktoken.registry")

    def no_network(blobpath: str) -> bytes:
        raise ConnectionError(f"test is offline; tiktoken tried to fetch {blobpath}")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken_registry, "ENCODINGS", {})
    monkeypatch.setattr(tiktoken_load, "read_file", no_network)


def test_tiktoken_counter_works_offline_from_bpe_openai(offline_tiktoken, tmp_path) -> None:
    pytest.importorskip("bpe_openai")
    counter = TiktokenCounter()
    # the OpenAI cookbook's example: "tiktoken is great!" is 6 cl100k_base tokens
    assert counter.count("tiktoken is great!") == 6
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    assert counter.count("<|endoftext|>") > 1  # special tokens count as plain text
    assert isinstance(counter, Counter)


def test_seeded_file_is_where_and_what_tiktoken_expects(offline_tiktoken, tmp_path) -> None:
    pytest.importorskip("bpe_openai")
    import tiktoken_ext.openai_public

    TiktokenCounter("cl100k_base")
    cached = tmp_path / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    assert cached.is_file()
    source = inspect.getsource(tiktoken_ext.openai_public.cl100k_base)
    expected = re.search(r'expected_hash="([0-9a-f]{64})"', source).group(1)
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == expected


def test_o200k_base_works_offline_too(offline_tiktoken) -> None:
    pytest.importorskip("bpe_openai")
    assert TiktokenCounter("o200k_base").count("hello world") == 2


def test_without_bpe_openai_offline_the_error_says_what_to_install(
        offline_tiktoken, monkeypatch) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None
                        if name == "bpe_openai" else real_find_spec(name, *args))
    with pytest.raises(ImportError, match=r"pip install tiktoken bpe-openai"):
        TiktokenCounter("cl100k_base")


def test_without_tiktoken_the_error_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(ImportError, match=r"pip install tiktoken bpe-openai"):
        TiktokenCounter()


def test_unknown_encoding_lists_the_known_ones(offline_tiktoken) -> None:
    with pytest.raises(ValueError, match="cl100k_base"):
        TiktokenCounter("no_such_encoding")


def test_main_context_counts_with_tiktoken(offline_tiktoken) -> None:
    pytest.importorskip("bpe_openai")
    from vmem.context import MainContext
    from vmem.core import CoreMemory
    from vmem.messages import Message

    counter = TiktokenCounter()
    ctx = MainContext("You are helpful.", CoreMemory.default(), 500, counter=counter)
    ctx.append(Message("user", "tiktoken is great!"))
    rendered = ctx.render()
    assert rendered[1]["content"] == "tiktoken is great!"
    # each message counts as its role and content joined by a space
    assert ctx.tokens() == sum(counter.count(f"{chat['role']} {chat['content']}")
                               for chat in rendered)


def test_chat_tokens_prices_everything_the_model_reads():
    """Role, name, content, the tool call's name and arguments, and the call id all count:
    a message is never cheaper than its parts."""
    from vmem.tokens import chat_tokens

    call = {"id": "call_1", "type": "function",
            "function": {"name": "archival_memory_search", "arguments": '{"query": "cat"}'}}
    words = ApproxCounter(ratio=1.0)
    assert chat_tokens({"role": "user", "content": "hi there"}, words) == 3
    assert chat_tokens({"role": "user", "name": "Ana", "content": "hi there"}, words) == 4
    assert chat_tokens({"role": "assistant", "content": "", "tool_calls": [call]}, words) == 4
    assert chat_tokens({"role": "tool", "content": "ok", "tool_call_id": "call_1"}, words) == 3
