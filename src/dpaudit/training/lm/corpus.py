"""Offline text for language-model audits, as byte tokens: nothing is downloaded.

Corpora: ``"pydoc"`` -- the help topics of the Python standard library (``pydoc_data.topics``,
about 465 KB of English prose and code that ships with every Python), and ``"synthetic"`` --
the project's generated public-domain corpus (``dpaudit/data/synthetic_corpus.txt``).

Tokens are bytes (0..255, :data:`BASE_VOCAB`); tokens from 256 on are *reserved* (new tokens
that no text in the corpus produces: the canaries' tokens, Panda et al., "Privacy Auditing of
Large Language Models", ICLR 2025, §3).  The corpus is cut into sequences of ``length``
tokens and split, in order, into a public pre-training part, the private fine-tuning part and a
held-out part (prefixes of canary sequences, next-token accuracy).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from dpaudit.training.choices import LM_CORPORA as CORPORA
from dpaudit.validation import check_choice, check_count

__all__ = ["CORPORA", "BASE_VOCAB", "CorpusSplit", "load_text", "encode", "decode",
           "corpus_split"]

BASE_VOCAB = 256
#: fractions of the sequences in the pre-training and fine-tuning parts (the rest is held out)
PRETRAIN_FRACTION = 0.45
FINETUNE_FRACTION = 0.45


def load_text(name: str) -> str:
    """The corpus ``name`` as one string (see module docstring)."""
    check_choice("corpus", name, CORPORA)
    if name == "pydoc":
        from pydoc_data.topics import topics

        return "\n".join(topics[k] for k in sorted(topics))
    text = resources.files("dpaudit.data").joinpath("synthetic_corpus.txt").read_text("utf-8")
    return "\n".join(line for line in text.splitlines() if not line.startswith("#"))


def encode(text: str) -> np.ndarray:
    """UTF-8 bytes as int64 tokens in [0, 256)."""
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)


def decode(tokens: np.ndarray) -> str:
    """Byte tokens back to text (reserved tokens shown as ``<r{k}>``)."""
    out = []
    for t in np.asarray(tokens).tolist():
        out.append(chr(t) if t < 128 else f"<r{t - BASE_VOCAB}>" if t >= BASE_VOCAB else "?")
    return "".join(out)


@dataclass(frozen=True, eq=False)
class CorpusSplit:
    """Token sequences (n, length) of the three parts, and the byte frequencies of the
    fine-tuning part (for rare-token canaries)."""

    pretrain: np.ndarray
    finetune: np.ndarray
    heldout: np.ndarray
    byte_counts: np.ndarray


@lru_cache(maxsize=8)
def corpus_split(name: str, length: int) -> CorpusSplit:
    """Cut corpus ``name`` into sequences of ``length`` tokens and split them in order."""
    length = check_count("length", length, minimum=4)
    tok = encode(load_text(name))
    n = tok.size // length
    if n < 20:
        raise ValueError(f"length must leave at least 20 sequences of the corpus; got {length}")
    seqs = tok[: n * length].reshape(n, length)
    a = int(n * PRETRAIN_FRACTION)
    b = a + int(n * FINETUNE_FRACTION)
    counts = np.bincount(seqs[a:b].ravel(), minlength=BASE_VOCAB)
    for arr in (seqs,):
        arr.setflags(write=False)
    return CorpusSplit(seqs[:a], seqs[a:b], seqs[b:], counts)
