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

__all__ = ["BINOMIAL_METHODS", "binomial_interval", "clopper_pearson", "hoeffding", "jeffreys",
           "wilson"]
