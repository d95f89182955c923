"""Case study 2: multi-column reconstruction from noisy 3-way marginals (Beyond Worst Case §6, App.
A).

One run of :func:`run_mai` is the paper's experiment for one (dataset, target columns, epsilon):

1. sample ``n_records`` (100) fresh records from the Bayesian network ``network`` -- the network
   is both the data source and the adversary's explicit prior, so the targets are independent
   draws from a product distribution (Thm 3.5's requirement);
2. release every 3-way marginal that touches a target column with Gaussian noise calibrated to
   (epsilon, delta) by GDP accounting over T = C(d,3) - C(d-d',3) releases
   (:mod:`dpaudit.papers.casestudies.rap`);
3. run the modified RAP M-AI attack (known columns frozen, unknown columns initialised at the
   prior conditioned on the known columns) and round;
4. score it: a record counts when all its target columns are right (exact match), or, for one
   column and tolerance E, when |x - z| <= E (paper Fig. 7, l_i = 1{|X_i - z_i| <= E});
5. the prior-only attack guesses the Bayes-optimal a-priori value (the conditional MAP, or the
   centre of the heaviest window) and its best-guess success p*_i is the prior of the bound;
6. Thm 3.5 with p*_i and (epsilon, delta) bounds the success count; v_UB(c) at c = 5/50/95% are
   the paper's error bars. The bound comes from :func:`dpaudit.risk.bounds.thm35_tail`.

Decisions (BWC notes §8): the prior baseline is reported both as the realised success of
mode-guessing and as sum_i p*_i (item 11); for multi-column runs the non-target, non-known columns
are either ``"dropped"`` from the released dataset (default for the multi-column experiment, so
the adversary knows exactly the 3 known columns; T = C(3+d',3) - 1) or ``"known"``
(T = C(d,3) - C(d-d',3)) (item 10). For one column every other column is known
(T = C(15,2) = 105 on ACS), as in the paper.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from dpaudit.papers.casestudies.census import BayesNet
from dpaudit.papers.casestudies.rap import (
    RAPOptions,
    marginal_workload,
    marginals_sigma,
    noisy_marginals,
    rap_attack,
)
from dpaudit.risk.bounds import TailBound, thm35_tail
from dpaudit.risk.priors import window_mass, within_distance_success
from dpaudit.validation import check_choice, check_count, check_delta

__all__ = ["MAISetting", "MAIOutcome", "window_mass", "run_mai", "visit_order_split",
           "CONFIDENCES"]

#: the paper's error-bar confidences (Beyond Worst Case §6.2, Fig. 4: "5%, 50%, 95%")
CONFIDENCES: tuple[float, ...] = (0.05, 0.5, 0.95)


@dataclass(frozen=True)
class MAISetting:
    """Inputs of one M-AI experiment (everything needed to reproduce it, besides the network).

    ``tolerance`` is the L1 error E of approximate reconstruction (single target column only).
    """

    epsilon: float
    delta: float = 1e-5
    n_records: int = 100
    k: int = 3
    tolerance: int = 0
    others: str = "known"
    rap: RAPOptions = field(default_factory=RAPOptions)

    def __post_init__(self) -> None:
        if not (self.epsilon > 0):
            raise ValueError(f"epsilon must be > 0 (inf allowed); got {self.epsilon!r}")
        check_delta(self.delta)
        check_count("n_records", self.n_records, minimum=1)
        check_count("k", self.k, minimum=1)
        check_count("tolerance", self.tolerance, minimum=0)
        check_choice("others", self.others, ("known", "dropped"))


@dataclass(frozen=True)
class MAIOutcome:
    """Result of :func:`run_mai` (counts are out of ``n_records``)."""

    target: tuple[str, ...]
    known: tuple[str, ...]
    setting: MAISetting
    n_marginals: int
    sigma: float
    attack_success: int
    prior_success: int
    expected_prior_success: float
    p_star: np.ndarray = field(repr=False)
    bound: TailBound = field(repr=False)

    @property
    def v_ub(self) -> dict[float, int]:
        """Thm 3.5 high-probability upper bounds v_UB(c) at the paper's confidences."""
        return {c: int(self.bound.v_ub(c)) for c in CONFIDENCES}

    def row(self) -> dict[str, Any]:
        s = asdict(self.setting)
        s.pop("rap")
        out = {"target": "+".join(self.target), "n_target_cols": len(self.target),
               **s, "n_marginals": self.n_marginals, "sigma": self.sigma,
               "noise_std": math.sqrt(2) * self.sigma, "attack_success": self.attack_success,
               "prior_success": self.prior_success,
               "expected_prior_success": self.expected_prior_success,
               "bound_expected": self.bound.expected}
        for c, v in self.v_ub.items():
            out[f"v_ub_{int(round(100 * c))}"] = v
        return out


def visit_order_split(network: BayesNet, n_known: int, n_target: int
                      ) -> tuple[list[int], list[int]]:
    """First ``n_known`` columns of the BayNet visit order are known, the next ``n_target`` are
    reconstructed (Beyond Worst Case §6.3: "reconstruct an increasing number of columns in the visit
    order
    of the network ... 3 known")."""
    n_known = check_count("n_known", n_known, minimum=1)
    n_target = check_count("n_target", n_target, minimum=1)
    if n_known + n_target > network.d:
        raise ValueError(f"n_known + n_target must be at most {network.d}")
    order = list(network.order)
    return order[:n_known], order[n_known:n_known + n_target]


def _resolve(network: BayesNet, cols: Sequence[int | str], name: str) -> list[int]:
    out = []
    for c in cols:
        if isinstance(c, str):
            if c not in network.names:
                raise ValueError(f"{name} must name columns of {list(network.names)}; got {c!r}")
            out.append(network.names.index(c))
        else:
            ci = int(c)
            if not 0 <= ci < network.d:
                raise ValueError(f"{name} column index {ci} out of range")
            out.append(ci)
    if len(set(out)) != len(out):
        raise ValueError(f"{name} contains duplicates")
    return out


def run_mai(network: BayesNet, target: Sequence[int | str], setting: MAISetting,
            rng: np.random.Generator, *, known: Sequence[int | str] | None = None,
            records: np.ndarray | None = None) -> MAIOutcome:
    """One M-AI experiment: sample, release noisy marginals, attack, score, bound.

    Args:
      network: the fitted BayNet (data source and prior).
      target: the column(s) to reconstruct.
      known: columns the adversary knows; default = every other column.
      records: optionally the original dataset (must be drawn from ``network``); default: a
        fresh sample of ``setting.n_records`` records.
    """
    tgt = _resolve(network, target, "target")
    if not tgt:
        raise ValueError("target must name at least one column")
    if known is None:
        kn = [c for c in range(network.d) if c not in tgt]
    else:
        kn = _resolve(network, known, "known")
    if set(kn) & set(tgt):
        raise ValueError("known and target columns must be disjoint")
    if not kn:
        raise ValueError("known must contain at least one column (records are matched on it)")
    if setting.tolerance and len(tgt) != 1:
        raise ValueError("tolerance > 0 is only defined for a single target column")
    if setting.others == "known" and known is not None:
        # the remaining columns are released and known to the adversary
        kn = kn + [c for c in range(network.d) if c not in kn and c not in tgt]
    cols = sorted(kn + tgt)
    if records is None:
        x = network.sample(setting.n_records, rng)
    else:
        x = np.asarray(records, dtype=np.int64)
        if x.ndim != 2 or x.shape[1] != network.d:
            raise ValueError(f"records must have shape (n, {network.d})")
    workload = marginal_workload(cols, tgt, setting.k)
    sigma = marginals_sigma(setting.epsilon, setting.delta, len(workload))
    released = noisy_marginals(x, network.sizes, workload, sigma, rng, epsilon=setting.epsilon,
                               delta=setting.delta)
    kx = x[:, kn]
    cond = [network.conditional_marginal(kx, kn, u) for u in tgt]
    result = rap_attack(kx, kn, tgt, released, init_probs=cond, options=setting.rap)
    truth = x[:, tgt]
    if len(tgt) == 1:
        e = setting.tolerance
        prior_w = window_mass(cond[0], e)
        p_star = np.atleast_1d(within_distance_success(cond[0], e))
        prior_guess = prior_w.argmax(axis=1)[:, None]
        attack_guess = window_mass(result.probs[0], e).argmax(axis=1)[:, None]
        ok_attack = np.abs(attack_guess - truth) <= e
        ok_prior = np.abs(prior_guess - truth) <= e
    else:
        prior_guess, p_star = network.map_completion(kx, kn, tgt)
        ok_attack = result.guess == truth
        ok_prior = prior_guess == truth
    bound = thm35_tail(p_star, setting.epsilon, setting.delta)
    return MAIOutcome(
        target=tuple(network.names[c] for c in tgt), known=tuple(network.names[c] for c in kn),
        setting=setting, n_marginals=len(workload), sigma=sigma,
        attack_success=int(np.all(ok_attack, axis=1).sum()),
        prior_success=int(np.all(ok_prior, axis=1).sum()),
        expected_prior_success=float(p_star.sum()), p_star=p_star, bound=bound)
