"""A local stand-in for an OpenAI-compatible chat-completions endpoint, for tests.

`FakeChatServer` is a stdlib HTTP server on 127.0.0.1 (random free port) in a thread.
It answers each POST to `/v1/chat/completions` with the next scripted reply, in order,
and keeps every request body so a test can check what the real `openai` client sent.
No network, no API key.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(content: str | None = None,
               tool_calls: list[tuple[str, str, str]] | None = None) -> dict[str, Any]:
    """A chat.completion body; `tool_calls` are (id, name, raw arguments string)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function",
             "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in tool_calls]
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000,
            "model": "fake-model",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    """An error reply in the OpenAI error shape."""
    return status, {"error": {"message": message, "type": "server_error", "code": None}}


class FakeChatServer:
    """Use as a context manager; `base_url` goes to the client, `requests` are kept."""

    def __init__(self, replies: list[dict[str, Any] | tuple[int, dict[str, Any]]]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append({key.lower(): value for key, value in self.headers.items()})
                if not self.path.endswith("/chat/completions"):
                    status, reply = error(404, f"no route {self.path}")
                elif not server.replies:
                    status, reply = error(500, "the fake server has no reply left")
                else:
                    reply = server.replies.pop(0)
                    status, reply = reply if isinstance(reply, tuple) else (200, reply)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                """Keep test output quiet."""

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True)

    def __enter__(self) -> FakeChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
