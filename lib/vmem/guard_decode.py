"""Readable text hidden in encoded runs: base64, hex, URL encoding, HTML character references.

An instruction can be hidden from a reader (and from patterns) by encoding it:
"49676e6f726520616c6c..." is hex, "SWdub3Jl..." base64, "Ignore%20all%20..." URL
encoding, "&#73;&#103;..." HTML character references. A model decodes these happily, so
the guard decodes them too and scans what comes out. Only decodings that read as text are
kept (mostly printable, and with a space, unless they are themselves another encoding), so
hashes, ids and binary data pass through.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import urllib.parse
from collections.abc import Iterator

__all__ = ["hidden_payloads"]

_BASE64_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
# 8+ hex bytes, optionally written as "0x..", "\x.." or separated by spaces or colons
_HEX_RUN = re.compile(r"(?:0x)?(?:[0-9a-fA-F]{2}){8,}|(?:(?:\\x|0x)?[0-9a-fA-F]{2}[ :]?){8,}")
_PERCENT = re.compile(r"%[0-9a-fA-F]{2}")
_ENTITY = re.compile(r"&#?[0-9a-zA-Z]{1,8};")


def _readable(decoded: str) -> bool:
    """Whether a decoding is text: mostly printable, and words (a space) or another
    encoding layer."""
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in decoded)
    return (len(decoded) >= 4 and printable >= 0.9 * len(decoded)
            and (" " in decoded or bool(_BASE64_TOKEN.fullmatch(decoded))
                 or bool(_HEX_RUN.fullmatch(decoded))))


def _base64(raw: str) -> Iterator[str]:
    for match in _BASE64_TOKEN.finditer(raw):
        token = match.group().rstrip("=")
        token += "=" * (-len(token) % 4)
        altchars = b"-_" if "-" in token or "_" in token else None
        try:
            yield base64.b64decode(token, altchars=altchars, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            continue


def _hex(raw: str) -> Iterator[str]:
    for match in _HEX_RUN.finditer(raw):
        digits = re.sub(r"\\x|0x|[ :]", "", match.group())
        try:
            yield bytes.fromhex(digits[:len(digits) // 2 * 2]).decode("utf-8")
        except ValueError:
            continue


def _url(raw: str) -> Iterator[str]:
    if len(_PERCENT.findall(raw)) >= 3:
        yield urllib.parse.unquote_plus(raw)


def _entities(raw: str) -> Iterator[str]:
    if len(_ENTITY.findall(raw)) >= 3:
        yield html.unescape(raw)


_DECODERS = (("base64", _base64), ("hex", _hex), ("URL encoding", _url),
             ("HTML character references", _entities))


def hidden_payloads(raw: str) -> Iterator[tuple[str, str]]:
    """(encoding, decoded text) for each readable encoded run in `raw`."""
    for name, decode in _DECODERS:
        for decoded in decode(raw):
            if decoded != raw and _readable(decoded):
                yield name, decoded
