"""Training data that installed packages ship: scikit-learn's digits (1,797 8x8 images).

Nothing is downloaded.  Pixels are scaled from [0, 16] to [0, 1]; the split is stratified and
seeded.  Three pixels (0, 32, 39) are zero in every image and a few more are almost always
zero, which is what the white-box canary placement exploits (see :mod:`.canaries`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from dpaudit.validation import check_count, check_probability

__all__ = ["Dataset", "load_digits_data"]


@dataclass(frozen=True, eq=False)
class Dataset:
    """A train/test split as float32 / int64 tensors.  ``x`` has shape (N, 64) (flat) or
    (N, 1, 8, 8) (``image=True``); labels are 0..9."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int = 10

    @property
    def n_train(self) -> int:
        return int(self.x_train.shape[0])

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])


def load_digits_data(seed: int = 0, *, test_fraction: float = 0.25,
                     image: bool = False) -> Dataset:
    """scikit-learn's digits, split train/test (stratified, seeded), pixels in [0, 1]."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    seed = check_count("seed", seed)
    check_probability("test_fraction", test_fraction, open_low=True)
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=test_fraction, random_state=seed,
                                          stratify=y)
    shape = (-1, 1, 8, 8) if image else (-1, 64)
    return Dataset(torch.from_numpy(xtr).reshape(shape), torch.from_numpy(ytr).long(),
                   torch.from_numpy(xte).reshape(shape), torch.from_numpy(yte).long())
