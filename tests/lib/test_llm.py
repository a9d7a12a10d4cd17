"""The real `openai` client path, against a local chat-completions server: tool calls, then
a final message, then an error response. No network and no API key."""

from __future__ import annotations

import json
import sys

import pytest
from fake_llm_server import FakeChatServer, completion, error

from vmem.agent import Agent
from vmem.errors import VMemError
from vmem.memory import Memory
from vmem.messages import Message

pytest.importorskip("openai")

from vmem.errors import LLMError  # noqa: E402
from vmem.llm import LLMSummarizer, OpenAIPolicy  # noqa: E402


@pytest.fixture
def memory(clock):
    with Memory.open(":memory:", clock=clock, max_tokens=4000) as memory:
        yield memory


def policy(server: FakeChatServer) -> OpenAIPolicy:
    return OpenAIPolicy("fake-model", base_url=server.base_url, api_key="dummy-key",
                        max_retries=0, timeout=10)


def test_tool_calls_then_a_final_message_then_an_error(memory):
    insert = json.dumps({"content": "The user's cat is Miso.", "request_heartbeat": True})
    replies = [
        completion(tool_calls=[("call_a", "archival_memory_insert", insert)]),
        completion(content="Got it, your cat is Miso [record 1]."),
        error(500, "the model crashed"),
    ]
    with FakeChatServer(replies) as server:
        agent = Agent(memory, policy(server))
        turn = agent.step("My cat is Miso.")
        assert (turn.stop_reason, turn.steps, turn.reply) == \
            ("final_message", 2, "Got it, your cat is Miso [record 1].")
        assert memory.archival.get(1).text == "The user's cat is Miso."
        failed = agent.step("Are you there?")
    assert failed.stop_reason == "error" and failed.steps == 1
    assert "HTTP 500" in failed.error and "the model crashed" in failed.error
    # what the real client sent: model, tools, and the tool result tied to the call id
    first, second, third = server.requests
    assert first["model"] == "fake-model" and first["tool_choice"] == "auto"
    assert [tool["function"]["name"] for tool in first["tools"]] == [
        "core_memory_append", "core_memory_replace", "core_memory_insert", "core_memory_rethink",
        "archival_memory_insert", "archival_memory_update", "archival_memory_search",
        "conversation_search", "send_message"]
    assert [m["role"] for m in first["messages"]] == ["system", "user", "system"]
    sent = second["messages"]
    assert sent[2]["tool_calls"][0]["id"] == "call_a"
    assert sent[3]["role"] == "tool" and sent[3]["tool_call_id"] == "call_a"
    assert "Saved as archival record 1" in sent[3]["content"]
    assert server.headers[0]["authorization"] == "Bearer dummy-key"
    assert third["messages"][-2] == {"role": "user", "content": "Are you there?"}
    # the failed turn left the context intact and usable
    assert [m.role for m in memory.context.messages][-1] == "user"


def test_malformed_tool_call_json_from_the_model_is_a_failed_result(memory):
    replies = [
        completion(tool_calls=[("call_b", "archival_memory_search", '{"query": "cat')]),
        completion(tool_calls=[("call_c", "send_message", '{"message": "No idea yet."}')]),
    ]
    with FakeChatServer(replies) as server:
        turn = Agent(memory, policy(server)).step("What is my cat called?")
    assert turn.calls[0].result.error == "invalid_json"
    assert (turn.stop_reason, turn.steps, turn.reply) == ("final_message", 2, "No idea yet.")
    assert server.requests[1]["messages"][3]["content"].startswith("[failed")


def test_a_client_error_says_what_to_check(memory):
    with FakeChatServer([error(404, "model 'nope' not found")]) as server, \
            pytest.raises(LLMError, match="HTTP 404.*model 'nope' not found.*model name"):
        policy(server).respond([{"role": "user", "content": "hi"}], [])


def test_an_unreachable_endpoint_is_an_error_turn_not_a_crash(memory):
    with FakeChatServer([]) as server:
        url = server.base_url
    dead = OpenAIPolicy("fake-model", base_url=url, api_key="dummy-key", max_retries=0,
                        timeout=5)
    turn = Agent(memory, dead).step("hi")
    assert turn.stop_reason == "error" and "LLMError" in turn.error


def test_llm_summarizer_sends_the_evicted_messages_and_returns_the_summary():
    evicted = [Message(role="user", content="My cat is Miso."),
               Message(role="system", content="Memory pressure notice"),
               Message(role="assistant", content="Noted.")]
    with FakeChatServer([completion(content="  The user's cat is Miso.\n")]) as server:
        summarizer = LLMSummarizer("fake-model", base_url=server.base_url, api_key="k",
                                   max_retries=0)
        assert summarizer.summarize("Earlier: met Ana.", evicted) == "The user's cat is Miso."
    request = server.requests[0]["messages"][1]["content"]
    assert "Earlier: met Ana." in request and "user: My cat is Miso." in request
    assert "assistant: Noted." in request and "Memory pressure" not in request


def test_missing_sdk_names_the_pip_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ImportError, match="pip install openai"):
        OpenAIPolicy("gpt-4o-mini", api_key="x")


def test_no_key_and_no_local_server_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(VMemError, match="OPENAI_API_KEY"):
        OpenAIPolicy("gpt-4o-mini")
