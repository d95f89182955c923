"""Quantile-regression membership scores on ONE model (Bertran, Tang, Kearns, Morgenstern,
Roth & Wu, "Scalable Membership Inference Attacks via Quantile Regression", NeurIPS 2023).

Attack (their §3): a per-example statistic s(x) of the target model (here any score array,
typically the logit margin z_y - max_{j != y} z_j or the scaled logit of the example's label,
:mod:`dpaudit.attacks.basic`) varies a lot between examples, so one global threshold is a
weak test.  Fit, on PUBLIC examples known NOT to be in the training set, a regressor
q_hat(x) of the conditional alpha-quantile of s(x) given the example's features, by
minimising the pinball loss

    L_alpha(q, s) = max(alpha (s - q), (alpha - 1)(s - q)),

so that P[s(x) > q_hat(x) | x non-member] ~ 1 - alpha for every x.  The test
"member iff s(x) > q_hat(x)" has false-positive rate ~ 1 - alpha whatever the example's
difficulty, without any shadow model.  As a one-run audit score we use the margin
s(x) - q_hat(x) (or, with ``standardize=True``, (s - q_0.5(x)) / (q_alpha(x) - q_0.5(x)),
which also equalises the spread; the paper's Gaussian parametrisation has the same aim).

Validity in an audit: the public examples, the features and the regressor's seed must not
depend on the canaries' secret bits (draw the public set before the audit, from data that
is not a canary).  Then the score of each canary is a function of the released model only
(post-processing), and every one-run estimator keeps its guarantee.

Model: scikit-learn's ``HistGradientBoostingRegressor(loss="quantile")`` (the ``attacks``
extra, ``pip install 'dpaudit[attacks]'``; scikit-learn is imported lazily), fitted without
early stopping so that the result is a deterministic function of (data, seed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.validation import (
    check_count,
    check_finite_array,
    check_finite_matrix,
    check_probability,
    check_same_length,
)

__all__ = ["QuantileOptions", "QuantileModel", "fit_quantile_model",
           "quantile_membership_scores", "pinball_loss"]

MIN_PUBLIC = 20


@dataclass(frozen=True)
class QuantileOptions:
    """Settings of the quantile regressor.

    Attributes:
      quantile: alpha, the level of the fitted conditional quantile (1 - target FPR).
      standardize: also fit the median and return (s - q_0.5) / (q_alpha - q_0.5).
      max_iter: boosting iterations; max_leaf_nodes, learning_rate as in scikit-learn.
      seed: random_state of the regressor.
    """

    quantile: float = 0.9
    standardize: bool = False
    max_iter: int = 200
    max_leaf_nodes: int = 15
    learning_rate: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        q = check_probability("quantile", self.quantile, open_low=True)
        if not q < 1.0:
            raise ValueError(f"quantile must be in (0, 1); got {self.quantile!r}")
        if self.standardize and not q > 0.5:
            raise ValueError(f"quantile must be in (0.5, 1) with standardize=True; got {q!r}")
        if not isinstance(self.standardize, bool):
            raise ValueError(f"standardize must be True or False; got {self.standardize!r}")
        check_count("max_iter", self.max_iter, minimum=1)
        check_count("max_leaf_nodes", self.max_leaf_nodes, minimum=2)
        check_probability("learning_rate", self.learning_rate, open_low=True)
        check_count("seed", self.seed)


def pinball_loss(score: Any, prediction: Any, quantile: float) -> float:
    """Mean pinball loss max(a (s - q), (a - 1)(s - q)) (Bertran et al., Eq. 1)."""
    s = check_finite_array("score", score)
    q = check_finite_array("prediction", prediction)
    check_same_length(score=s, prediction=q)
    a = check_probability("quantile", quantile)
    d = s - q
    return float(np.maximum(a * d, (a - 1) * d).mean())


@dataclass(frozen=True, eq=False)
class QuantileModel:
    """A fitted conditional-quantile model; ``score(features, s)`` is the membership score."""

    options: QuantileOptions
    upper: Any
    median: Any | None
    n_features: int

    def predict(self, features: Any) -> np.ndarray:
        x = _features(features, self.n_features)
        return np.asarray(self.upper.predict(x), dtype=float)

    def score(self, features: Any, scores: Any) -> np.ndarray:
        """Membership score of examples with target-model statistic ``scores``."""
        x = _features(features, self.n_features)
        s = check_finite_array("scores", scores)
        if s.size != x.shape[0]:
            raise ValueError(f"scores must have one entry per row of features: got "
                             f"{s.size} scores and {x.shape[0]} rows")
        hi = np.asarray(self.upper.predict(x), dtype=float)
        if self.median is None:
            return s - hi
        mid = np.asarray(self.median.predict(x), dtype=float)
        spread = np.maximum(hi - mid, 1e-6 * (1.0 + np.abs(mid)))
        return (s - mid) / spread


def _features(features: Any, n_features: int | None = None) -> np.ndarray:
    x = check_finite_matrix("features", features)
    if x.ndim != 2:
        raise ValueError(f"features must be a 2-D array (examples, features); got shape "
                         f"{x.shape}")
    if n_features is not None and x.shape[1] != n_features:
        raise ValueError(f"features must have {n_features} columns (as when fitted); got "
                         f"{x.shape[1]}")
    return x


def _regressor(options: QuantileOptions, alpha: float) -> Any:
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(
        loss="quantile", quantile=alpha, max_iter=options.max_iter,
        max_leaf_nodes=options.max_leaf_nodes, learning_rate=options.learning_rate,
        early_stopping=False, random_state=options.seed)


def fit_quantile_model(public_features: Any, public_scores: Any,
                       options: QuantileOptions | None = None) -> QuantileModel:
    """Fit q_hat_alpha(x) (and q_hat_0.5 when standardising) on public NON-member examples."""
    opts = QuantileOptions() if options is None else options
    if not isinstance(opts, QuantileOptions):
        raise ValueError("options must be a QuantileOptions")
    x = _features(public_features)
    s = check_finite_array("public_scores", public_scores)
    if s.size != x.shape[0]:
        raise ValueError(f"public_scores must have one entry per row of public_features: got "
                         f"{s.size} scores and {x.shape[0]} rows")
    if s.size < MIN_PUBLIC:
        raise ValueError(f"public_scores: need at least {MIN_PUBLIC} public examples to fit a "
                         f"quantile model; got {s.size}")
    upper = _regressor(opts, opts.quantile).fit(x, s)
    median = _regressor(opts, 0.5).fit(x, s) if opts.standardize else None
    return QuantileModel(opts, upper, median, x.shape[1])


def quantile_membership_scores(public_features: Any, public_scores: Any, features: Any,
                               scores: Any, options: QuantileOptions | None = None
                               ) -> np.ndarray:
    """Fit on the public non-members, then score the audited examples (canaries):
    s(x) - q_hat_alpha(x), or the standardised version (see :class:`QuantileOptions`)."""
    model = fit_quantile_model(public_features, public_scores, options)
    return model.score(features, scores)
