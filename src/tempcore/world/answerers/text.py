"""The zoo's text codec: questions and options as bags of words and hashed bigrams."""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from tempcore.records import LETTERS
from tempcore.world.answerers.constants import BIGRAM_BUCKETS

_WORD = re.compile(r"[a-z0-9]+")
_OPTION_LINE = re.compile(r"^\s*\(?([A-Z])[.):]\s")


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric words of ``text``."""
    return _WORD.findall(text.lower())


def question_text(prompt: str, n_options: int) -> str:
    """The prompt without its option lines (letters below ``n_options``), ``Options:`` and timestamps."""
    keep = []
    for line in prompt.splitlines():
        m = _OPTION_LINE.match(line)
        if m and LETTERS.index(m.group(1)) < n_options:
            continue
        if line.strip().lower().startswith(("options:", "frame timestamps")):
            continue
        keep.append(line)
    return "\n".join(keep)


@dataclass(frozen=True)
class TextCodec:
    """Word and hashed-bigram ids over a closed vocabulary (id 0: unknown word)."""

    vocab: tuple[str, ...]
    buckets: int = BIGRAM_BUCKETS

    @functools.cached_property
    def _index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.vocab)}

    @property
    def size(self) -> int:
        """Rows of the embedding table: the vocabulary, then the bigram buckets."""
        return len(self.vocab) + self.buckets

    def ids(self, text: str) -> list[int]:
        """Word ids then bigram ids of ``text`` (``[0]`` for a text without words)."""
        toks = words(text)
        index = self._index
        uni = [index.get(w, 0) for w in toks]
        base = len(self.vocab)
        bi = [base + zlib.crc32(f"{a} {b}".encode()) % self.buckets for a, b in zip(toks, toks[1:])]
        return (uni + bi) or [0]

    @classmethod
    def build(cls, texts: Iterable[str], buckets: int = BIGRAM_BUCKETS) -> TextCodec:
        """A codec whose vocabulary is every word of ``texts`` (sorted), after ``<unk>``."""
        vocab = sorted({w for t in texts for w in words(t)})
        return cls(("<unk>", *vocab), buckets)


def _bag(codec: TextCodec, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """(flat ids, offsets) for ``nn.EmbeddingBag``."""
    ids = [codec.ids(t) for t in texts]
    offsets = np.cumsum([0] + [len(i) for i in ids[:-1]])
    flat = [x for i in ids for x in i]
    return torch.tensor(flat, dtype=torch.long), torch.tensor(offsets, dtype=torch.long)



def vocabulary() -> tuple[list[str], list[str]]:
    """The colours and shapes the frame encoder reads (the world's, in :mod:`tempcore.world.scene` order)."""
    from tempcore.world.scene import COLOURS, SHAPES

    return list(COLOURS), list(SHAPES)
