"""Encoded or hidden text the guard unwraps before scanning.

An instruction hidden as `SWdub3Jl...`, `49676e6f7265...`, `\\x49\\x67...`, `%49%67...` or
`&#73;&#103;...` reads as noise to every pattern, and one written in Unicode tag
characters (U+E0020 to U+E007E mirror ASCII) or in variation selectors (one byte each)
is invisible on screen though some models read it; `payloads(raw)` yields what such text
decodes to, when that is readable, with how it was hidden. Every regex is bounded.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from collections.abc import Iterator
from urllib.parse import unquote

__all__ = ["hidden_payloads", "payloads"]

_BASE64_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
# Hex: a run of 8+ byte pairs, plain, each prefixed by 0x or \x, or split by spaces or
# colons, starting where a word starts (the "ed" of "Escaped: \x49..." is no byte).
_HEX_RUN = re.compile(r"(?<![0-9A-Za-z])(?:(?:\\x|0x)?[0-9a-fA-F]{2}[\s:,-]{0,2}){8,}")
_HEX_PAIR = re.compile(r"(?:\\x|0x)?([0-9a-fA-F]{2})")
_PERCENT_RUN = re.compile(r"(?:%[0-9a-fA-F]{2}[\w.~+-]{0,12}){4,}")
_ENTITY = re.compile(r"&#(?:x[0-9a-fA-F]{1,6}|[0-9]{1,7});|&[a-zA-Z]{2,8};")


def _readable(decoded: str) -> bool:
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in decoded)
    return bool(decoded) and printable >= 0.9 * len(decoded)


def _base64(raw: str) -> Iterator[str]:
    for match in _BASE64_TOKEN.finditer(raw):
        token = match.group().rstrip("=")
        token += "=" * (-len(token) % 4)
        try:
            decoded = base64.b64decode(token, altchars=b"-_" if "-" in token or "_" in token
                                       else None, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if _readable(decoded) and (" " in decoded or _BASE64_TOKEN.fullmatch(decoded)):
            yield decoded


def _hex(raw: str) -> Iterator[str]:
    for match in _HEX_RUN.finditer(raw):
        pairs = _HEX_PAIR.findall(match.group())
        if len(pairs) < 8 or match.group().strip().isdigit():
            continue
        try:
            decoded = bytes.fromhex("".join(pairs)).decode("utf-8")
        except ValueError:
            continue
        if _readable(decoded) and " " in decoded:
            yield decoded


def hidden_payloads(raw: str) -> Iterator[tuple[str, str]]:
    """(how, text) for text written in tag characters or as bytes in variation selectors."""
    if raw.isascii():
        return
    tags = "".join(chr(ord(ch) - 0xE0000) for ch in raw if "\U000e0020" <= ch <= "\U000e007e")
    if tags.strip():
        yield "invisible tag characters", tags
    data = bytes(ord(ch) - 0xFE00 if ch <= "\ufe0f" else ord(ch) - 0xE0100 + 16
                 for ch in raw if "\ufe00" <= ch <= "\ufe0f" or "\U000e0100" <= ch <= "\U000e01ef")
    if len(data) >= 8:
        decoded = data.decode("utf-8", errors="replace")
        if _readable(decoded) and " " in decoded:
            yield "variation selectors", decoded


def payloads(raw: str) -> Iterator[tuple[str, str]]:
    """(how it was encoded or hidden, decoded text) for each readable run in `raw`."""
    yield from hidden_payloads(raw)
    for decoded in _base64(raw):
        yield "base64", decoded
    for decoded in _hex(raw):
        yield "hex", decoded
    if "%" in raw:
        for match in _PERCENT_RUN.finditer(raw):
            decoded = unquote(match.group().replace("+", " "))
            if decoded != match.group() and _readable(decoded) and " " in decoded:
                yield "URL encoding", decoded
    if "&" in raw and _ENTITY.search(raw):
        decoded = html.unescape(raw)
        if decoded != raw:
            yield "HTML references", decoded
