"""The flat coordinate space of a model's trainable parameters, framework-neutral.

A model's trainable parameters are a list of tensors; dpaudit addresses them as one flat
vector (tensor 0's elements first, each tensor in row-major order), the coordinate space in
which canaries are placed and read.  :class:`Layout` keeps only the tensors' names and
sizes, so the same canary plan serves PyTorch (``model.parameters()`` order) and JAX
(a flattened pytree's leaf order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpaudit.validation import check_count

__all__ = ["Layout"]


@dataclass(frozen=True)
class Layout:
    """Names and sizes of the trainable tensors, in the order of the flat coordinate space."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.names) != len(self.sizes):
            raise ValueError("names and sizes must have the same length (one per tensor)")
        for s in self.sizes:
            check_count("sizes", s, minimum=1)

    @classmethod
    def from_sizes(cls, sizes: Sequence[int], names: Sequence[str] | None = None) -> Layout:
        names = tuple(names) if names is not None else tuple(f"t{i}" for i in range(len(sizes)))
        return cls(names, tuple(int(s) for s in sizes))

    @property
    def dimension(self) -> int:
        """Total number of coordinates d."""
        return int(sum(self.sizes))

    @property
    def offsets(self) -> np.ndarray:
        """Flat index of each tensor's first element."""
        return np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)

    def tensor_of(self, coords: np.ndarray) -> np.ndarray:
        """Index of the tensor holding each flat coordinate (any shape)."""
        c = np.asarray(coords, dtype=np.int64)
        if c.size and (c.min() < 0 or c.max() >= self.dimension):
            raise ValueError(f"coordinates must be in [0, {self.dimension}) (the trainable "
                             f"coordinates)")
        return np.searchsorted(np.cumsum(self.sizes), c, side="right")

    def split(self, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(tensor index, offset inside that tensor) of each flat coordinate."""
        t = self.tensor_of(coords)
        return t, np.asarray(coords, dtype=np.int64) - self.offsets[t]
