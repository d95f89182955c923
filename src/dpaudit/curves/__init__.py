"""Privacy curves (f-DP trade-off functions), conversions and families."""

from dpaudit.curves.accounting import PLDCurve, ProfileCurve, dpsgd_curve, dpsgd_family
from dpaudit.curves.base import Curve, numeric_delta, numeric_epsilon
from dpaudit.curves.eps_delta import EpsDeltaDP
from dpaudit.curves.families import (
    DEFAULT_FAMILY,
    FAMILY_NAMES,
    Family,
    claim_family,
    resolve_family,
)
from dpaudit.curves.gaussian import GaussianDP, gdp_delta
from dpaudit.curves.laplace import LaplaceDP
from dpaudit.curves.numeric import NumericCurve
from dpaudit.curves.subsampled import SubsampledGaussianDP
from dpaudit.curves.zcdp import ZCDP, zcdp_rho

__all__ = [
    "Curve", "GaussianDP", "LaplaceDP", "EpsDeltaDP", "SubsampledGaussianDP", "NumericCurve",
    "PLDCurve", "dpsgd_curve", "Family", "resolve_family", "FAMILY_NAMES", "numeric_delta",
    "numeric_epsilon", "gdp_delta", "claim_family", "DEFAULT_FAMILY",
    "dpsgd_family", "ProfileCurve", "ZCDP", "zcdp_rho",
]
