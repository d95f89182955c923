"""Statistics: binomial confidence bounds (and, in sibling modules, XBern intervals,
Poisson-binomial and order statistics)."""

from dpaudit.stats.binomial import (
    BINOMIAL_METHODS,
    binomial_interval,
    clopper_pearson,
    hoeffding,
    jeffreys,
    wilson,
)
from dpaudit.stats.intervals_xbern import (
    bernoulli_interval,
    xbern_bounds,
    xbern_interval,
    xbern_interval_from_counts,
    xbern_interval_from_moments,
)
from dpaudit.stats.poisson_binomial import (
    poisson_binomial_logpmf,
    poisson_binomial_pmf,
    poisson_binomial_quantile,
    poisson_binomial_sf,
    poisson_binomial_tail,
)
from dpaudit.stats.xbern import empirical_moments, moments_at_thresholds, xbern_counts

__all__ = ["BINOMIAL_METHODS", "binomial_interval", "clopper_pearson", "hoeffding", "jeffreys",
           "wilson"]
__all__ += ["poisson_binomial_logpmf", "poisson_binomial_pmf", "poisson_binomial_quantile",
            "poisson_binomial_sf", "poisson_binomial_tail"]
__all__ += ["bernoulli_interval", "xbern_bounds", "xbern_interval", "xbern_interval_from_counts",
            "xbern_interval_from_moments", "empirical_moments", "moments_at_thresholds",
            "xbern_counts"]
