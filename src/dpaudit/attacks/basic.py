"""Simple membership scores from a model's precomputed outputs (no training, pure NumPy).

Inputs are a model's logits ``(..., classes)`` or per-example losses, and integer labels.
Every score follows the dpaudit convention: higher = more likely a member.

* :func:`loss_score` -- minus the cross-entropy loss (Yeom et al. 2018, "Privacy risk in
  machine learning", the LOSS attack): members have lower loss;
* :func:`logit_margin` -- z_y - max_{j != y} z_j, the margin of the true class (the "hinge"
  statistic of Carlini et al. 2022, §VI-A footnote; monotone in the true-class confidence);
* :func:`scaled_logit` -- phi(p) = log(p / (1 - p)) of the true-class softmax probability p,
  computed stably as z_y - logsumexp_{j != y} z_j (Carlini et al. 2022, §IV-B Eq. 4: the
  "logit scaling" that makes LiRA's per-example distributions close to Gaussian);
* :func:`cross_entropy` -- the per-example loss -log softmax(z)_y (log-space).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpaudit.validation import check_finite_array

__all__ = ["cross_entropy", "loss_score", "logit_margin", "scaled_logit",
           "true_class_probability"]


def _logits_labels(logits: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        z = np.asarray(logits, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("logits must be an array of real numbers (..., classes)") from None
    if z.ndim < 1 or z.shape[-1] < 2:
        raise ValueError(f"logits must have shape (..., classes) with at least 2 classes, "
                         f"got shape {z.shape}")
    if not np.isfinite(z).all():
        raise ValueError("logits must be finite (no NaN/inf)")
    y = np.asarray(labels)
    if y.shape != z.shape[:-1]:
        raise ValueError(f"labels must have shape {z.shape[:-1]} (logits without the class "
                         f"axis), got {y.shape}")
    if y.size and (not np.issubdtype(y.dtype, np.integer) and
                   not (np.issubdtype(y.dtype, np.floating) and (y == np.round(y)).all())):
        raise ValueError("labels must be integer class indices")
    y = y.astype(np.int64)
    if y.size and ((y < 0).any() or (y >= z.shape[-1]).any()):
        raise ValueError(f"labels must be in [0, {z.shape[-1] - 1}]")
    return z, y


def _true_and_rest(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """z_y and logsumexp over the other classes (log-space, stable)."""
    zy = np.take_along_axis(z, y[..., None], axis=-1)[..., 0]
    mask = np.ones_like(z, dtype=bool)
    np.put_along_axis(mask, y[..., None], False, axis=-1)
    rest = logsumexp(np.where(mask, z, -np.inf), axis=-1)
    return zy, rest


def cross_entropy(logits: Any, labels: Any) -> np.ndarray:
    """-log softmax(z)_y = logsumexp(z) - z_y, per example."""
    z, y = _logits_labels(logits, labels)
    zy = np.take_along_axis(z, y[..., None], axis=-1)[..., 0]
    return logsumexp(z, axis=-1) - zy


def true_class_probability(logits: Any, labels: Any) -> np.ndarray:
    """softmax(z)_y, the "Pr(x | theta)" of RMIA (Zarifzadeh et al. 2024, §3)."""
    return np.exp(-cross_entropy(logits, labels))


def loss_score(losses: Any = None, *, logits: Any = None, labels: Any = None) -> np.ndarray:
    """LOSS attack score: minus the per-example loss (given, or cross-entropy of logits)."""
    if losses is not None:
        if logits is not None:
            raise ValueError("give either losses or logits/labels, not both")
        return -check_finite_array("losses", np.ravel(np.asarray(losses, dtype=float)))
    if logits is None or labels is None:
        raise ValueError("loss_score needs losses, or logits and labels")
    return -cross_entropy(logits, labels)


def logit_margin(logits: Any, labels: Any) -> np.ndarray:
    """z_y - max_{j != y} z_j per example."""
    z, y = _logits_labels(logits, labels)
    zy = np.take_along_axis(z, y[..., None], axis=-1)[..., 0]
    other = z.copy()
    np.put_along_axis(other, y[..., None], -np.inf, axis=-1)
    return zy - other.max(axis=-1)


def scaled_logit(logits: Any, labels: Any) -> np.ndarray:
    """phi = log(p_y / (1 - p_y)) = z_y - logsumexp_{j != y} z_j (Carlini et al. 2022, Eq. 4)."""
    z, y = _logits_labels(logits, labels)
    zy, rest = _true_and_rest(z, y)
    return zy - rest
