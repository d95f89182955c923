"""Training data that installed packages ship: scikit-learn's digits (1,797 8x8 images) and
two dense tabular sets, breast_cancer (569 x 30, 2 classes) and wine (178 x 13, 3 classes),
standardised on the training split (every feature is non-zero for almost every record: no
silent coordinate for canaries -- see ``reserved``).

Nothing is downloaded.  Pixels are scaled from [0, 16] to [0, 1]; the split is stratified and
seeded.  Three pixels (0, 32, 39) are zero in every image and a few more are almost always
zero, which is what the white-box canary placement exploits (see :mod:`.canaries`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from dpaudit.training.choices import DATASETS  # the one list (torch-free)
from dpaudit.training.common import load_digits_split
from dpaudit.validation import check_count, check_probability

__all__ = ["Dataset", "load_digits_data", "load_data", "DATASETS", "reserve_features"]



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
    """scikit-learn's digits, split train/test (stratified, seeded), pixels in [0, 1]
    (:func:`dpaudit.training.common.load_digits_split`) as torch tensors."""
    xtr, ytr, xte, yte = load_digits_split(seed, test_fraction=test_fraction)
    shape = (-1, 1, 8, 8) if image else (-1, 64)
    return Dataset(torch.from_numpy(xtr).reshape(shape), torch.from_numpy(ytr).long(),
                   torch.from_numpy(xte).reshape(shape), torch.from_numpy(yte).long())


def reserve_features(x: torch.Tensor, reserved: int) -> torch.Tensor:
    """Append ``reserved`` input features that real data leaves at exactly 0 (flat inputs):
    the first layer's weights on them receive no real-data gradient, so canaries read there
    see only their own signal and the noise (docs/training.md, "reserving coordinates")."""
    reserved = check_count("reserved", reserved)
    if x.ndim != 2:
        raise ValueError("reserved features need flat (N, features) inputs")
    return torch.cat([x, torch.zeros((x.shape[0], reserved), dtype=x.dtype)], dim=1)


def load_data(name: str = "digits", seed: int = 0, *, test_fraction: float = 0.25,
              image: bool = False, reserved: int = 0) -> Dataset:
    """A built-in data set split train/test (stratified, seeded): "digits" (pixels in [0, 1]),
    "breast_cancer" or "wine" (standardised with the training split's mean and sd); with
    ``reserved`` zero features appended (flat inputs only)."""
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    from dpaudit.validation import check_choice

    check_choice("data", name, DATASETS)
    if name == "digits":
        d = load_digits_data(seed, test_fraction=test_fraction, image=image)
    else:
        if image:
            raise ValueError(f"data {name!r} is tabular: image inputs need data 'digits'")
        seed = check_count("seed", seed)
        check_probability("test_fraction", test_fraction, open_low=True)
        loader = datasets.load_breast_cancer if name == "breast_cancer" else datasets.load_wine
        x, y = loader(return_X_y=True)
        xtr, xte, ytr, yte = train_test_split(x, y, test_size=test_fraction,
                                              random_state=seed, stratify=y)
        mu, sd = xtr.mean(0), xtr.std(0) + 1e-12
        d = Dataset(torch.from_numpy(((xtr - mu) / sd).astype(np.float32)),
                    torch.from_numpy(ytr).long(),
                    torch.from_numpy(((xte - mu) / sd).astype(np.float32)),
                    torch.from_numpy(yte).long(), num_classes=int(y.max()) + 1)
    if reserved:
        d = Dataset(reserve_features(d.x_train, reserved), d.y_train,
                    reserve_features(d.x_test, reserved), d.y_test, d.num_classes)
    return d
