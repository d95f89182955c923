"""Risk bounds: a DP guarantee plus a prior -> bounds on attack success (Beyond Worst Case).

    from dpaudit import risk
    risk.beta(0.1, 1.0)                                   # 0.2320 (Thm 3.2 flipping prob.)
    tb = risk.thm35_tail([0.56] * 100, epsilon=1, delta=1e-5)
    tb.v_ub(0.95)                                         # 84 of 100 (paper §6, ACS 'SEX')
    risk.epsilon_protect(1e-9, tau=0.05, delta=1e-5)      # 17.78 (uniform 9-digit canary)

Modules: :mod:`~dpaudit.risk.flipping` (beta), :mod:`~dpaudit.risk.bounds` (Thm 3.2/3.3/3.5,
Cor 3.4, v_UB, advantage, eps_protect, leaked bits), :mod:`~dpaudit.risk.fdp` (from f-DP curves),
:mod:`~dpaudit.risk.comparators` (ReRo, Narcissus, MMC, Steinke), :mod:`~dpaudit.risk.priors`.
"""

from dpaudit.risk.bounds import (
    THEOREMS,
    TailBound,
    advantage,
    advantage_bound,
    alpha_term,
    cor34_monte_carlo,
    cor34_tail,
    epsilon_for_leak,
    epsilon_for_posterior,
    epsilon_protect,
    leak_probability,
    leaked_bits,
    pure_tail,
    single_target_bound,
    thm33_tail,
    thm35_bound,
    thm35_tail,
    thm35_v_ub,
    v_ub,
)
from dpaudit.risk.comparators import (
    kaissis_bound,
    mmc_bound,
    narcissus_bound,
    narcissus_printed_form,
    rero_bound,
    steinke_membership_bound,
)
from dpaudit.risk.fdp import (
    curve_epsilon,
    gdp_mu,
    pure_tail_from_curve,
    single_target_bound_from_curve,
    thm35_bound_from_curve,
    thm35_tail_from_curve,
)
from dpaudit.risk.flipping import beta, posterior_lower
from dpaudit.risk.priors import (
    DiscretePrior,
    ExplicitPrior,
    UniformPrior,
    ZipfPrior,
    best_guess_success,
    exact_match_success,
    generalized_harmonic,
    guess_success,
    heterogeneous_priors,
    load_priors,
    password_prior,
    pii_like_prior,
    within_distance_success,
)

__all__ = [
    "THEOREMS", "TailBound", "advantage", "advantage_bound", "alpha_term", "cor34_monte_carlo",
    "cor34_tail", "epsilon_for_leak", "epsilon_for_posterior", "epsilon_protect",
    "leak_probability", "leaked_bits", "pure_tail", "single_target_bound", "thm33_tail",
    "thm35_bound", "thm35_tail", "thm35_v_ub", "v_ub",
    "kaissis_bound", "mmc_bound", "narcissus_bound", "narcissus_printed_form", "rero_bound",
    "steinke_membership_bound",
    "curve_epsilon", "gdp_mu", "pure_tail_from_curve", "single_target_bound_from_curve",
    "thm35_bound_from_curve", "thm35_tail_from_curve",
    "beta", "posterior_lower",
    "DiscretePrior", "ExplicitPrior", "UniformPrior", "ZipfPrior", "best_guess_success",
    "exact_match_success", "generalized_harmonic", "guess_success", "heterogeneous_priors",
    "load_priors", "password_prior", "pii_like_prior", "within_distance_success",
]
