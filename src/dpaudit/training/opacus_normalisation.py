"""Opacus's data-dependent normalisation (opacus issues #571 and #819), on unmodified Opacus.

``PrivacyEngine.make_private`` (Opacus 1.0 -- 1.6) turns the user's ``DataLoader`` into a
Poisson loader of rate q = 1 / len(data_loader) and sets the optimizer's divisor to
``expected_batch_size = int(len(dataset) * q)`` -- a floor of the *private* data set's size N.
The released update is (sum of clipped gradients + N(0, sigma^2 C^2 I)) / floor(N q), while
the accountant assumes the plain subsampled Gaussian, whose output does not depend on N
beyond the sampled examples.  Between neighbouring data sets (add/remove one record) the
divisor changes whenever floor(N q) != floor((N + 1) q) (q itself may change too); with a
d-dimensional update the noise's norm sigma C sqrt(d) / floor(N q) is known to relative
precision about 1 / sqrt(2 d), so for large d the two data sets become almost perfectly
distinguishable, whatever sigma -- Opacus issue #819 ("floor-based expected-averaged subsampled
Gaussian mechanism"; Eexac 2026, arXiv 2605.15648) and the small-sample leakage of issue #571.

:class:`OpacusRun` is the mechanism (make_private, T steps of SGD on a linear model with
``outputs`` outputs, the released model), :class:`SizeNeighbours` the pair (first N records,
first N + 1), :class:`UpdateNorm` the score; together a :class:`dpaudit.BlackBoxAudit` for
the trial engine (``dpaudit.engine.run_audit``).  :func:`divisor_leaks` states which
settings leak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpaudit.validation import check_count, check_positive

__all__ = ["OpacusRun", "SizeNeighbours", "UpdateNorm", "divisor_leaks", "opacus_divisor",
           "normalisation_audit"]


def opacus_divisor(n: int, batch_size: int) -> tuple[float, int]:
    """(q, expected_batch_size) that ``make_private`` derives from a DataLoader of ``n``
    records and ``batch_size`` (drop_last False): q = 1 / ceil(n / b), int(n q)."""
    n = check_count("n", n, minimum=1)
    b = check_count("batch_size", batch_size, minimum=1)
    q = 1 / math.ceil(n / b)
    return q, int(n * q)


def divisor_leaks(n: int, batch_size: int) -> bool:
    """True iff the divisor of N = n differs from that of n + 1 (add one record) or n - 1."""
    d = opacus_divisor(n, batch_size)[1]
    return any(opacus_divisor(m, batch_size)[1] != d for m in (n - 1, n + 1) if m >= 1)


@dataclass(frozen=True)
class SizeNeighbours:
    """D0 = the first ``n`` records, D1 = the first n + 1 (add/remove adjacency) of a fixed
    random regression data set (``features`` inputs, ``outputs`` targets)."""

    n: int
    features: int = 4
    outputs: int = 1000
    seed: int = 0

    def __call__(self, rng: np.random.Generator) -> tuple[tuple[np.ndarray, np.ndarray],
                                                          tuple[np.ndarray, np.ndarray]]:
        g = np.random.default_rng(self.seed)
        x = g.normal(size=(self.n + 1, self.features)).astype(np.float32)
        y = g.normal(size=(self.n + 1, self.outputs)).astype(np.float32)
        return (x[:-1], y[:-1]), (x, y)


@dataclass(frozen=True)
class OpacusRun:
    """Unmodified Opacus: ``PrivacyEngine().make_private`` on DataLoader(data, batch_size),
    SGD (lr 1) for ``steps`` steps of MSE regression with a bias-free linear model started at
    0; releases the final weights (flat).  All randomness (Poisson sampling, noise) comes
    from the trial's generator."""

    batch_size: int
    noise_multiplier: float
    steps: int = 1
    max_grad_norm: float = 1.0

    def __call__(self, data: tuple[np.ndarray, np.ndarray], rng: np.random.Generator
                 ) -> np.ndarray:
        import logging
        import warnings

        import torch
        from opacus import PrivacyEngine
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.set_num_threads(1)
        logging.getLogger("opacus").setLevel(logging.ERROR)  # "First batch is empty" notes
        x, y = (torch.from_numpy(a) for a in data)
        seed = int(rng.integers(0, 2 ** 62))
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(seed)  # the Poisson sampler draws from torch's global RNG
            model = nn.Linear(x.shape[1], y.shape[1], bias=False)
            nn.init.zeros_(model.weight)
            engine = PrivacyEngine()
            model, opt, loader = engine.make_private(
                module=model, optimizer=torch.optim.SGD(model.parameters(), lr=1.0),
                data_loader=DataLoader(TensorDataset(x, y), batch_size=self.batch_size),
                noise_multiplier=self.noise_multiplier, max_grad_norm=self.max_grad_norm,
                noise_generator=torch.Generator().manual_seed(seed + 1))
            done = 0
            while done < self.steps:
                for xb, yb in loader:
                    opt.zero_grad()
                    if xb.shape[0]:
                        nn.functional.mse_loss(model(xb), yb).backward()
                    opt.step()
                    done += 1
                    if done >= self.steps:
                        break
            return model._module.weight.detach().double().numpy().ravel()


@dataclass(frozen=True)
class UpdateNorm:
    """Score: minus the norm of the released weights (a smaller divisor -- the smaller data
    set -- gives a larger update; higher = "D1", the larger data set)."""

    def __call__(self, output: np.ndarray) -> float:
        return -float(np.linalg.norm(output))


def normalisation_audit(n: int, batch_size: int, noise_multiplier: float, *,
                        outputs: int = 1000, features: int = 4, steps: int = 1,
                        max_grad_norm: float = 1.0) -> object:
    """The :class:`dpaudit.BlackBoxAudit` of Opacus's normalisation at these settings."""
    from dpaudit.games.blackbox import BlackBoxAudit

    check_positive("noise_multiplier", noise_multiplier)
    return BlackBoxAudit(OpacusRun(batch_size, noise_multiplier, steps, max_grad_norm),
                         SizeNeighbours(n, features, outputs), UpdateNorm())
