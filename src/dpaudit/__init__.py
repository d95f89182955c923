"""dpaudit: empirical privacy auditing of differential privacy, and attack-risk bounds.

    import dpaudit as da
    da.GaussianDP(mu=1.0).epsilon(1e-5)          # 4.3772
    from dpaudit import estimators as E
    E.multi_run(member, score, delta=1e-5, confidence=0.95)
"""

from dpaudit.curves import (
    Curve,
    EpsDeltaDP,
    Family,
    GaussianDP,
    LaplaceDP,
    NumericCurve,
    SubsampledGaussianDP,
    dpsgd_curve,
    resolve_family,
)
from dpaudit.estimators.one_run import audit_one_run
from dpaudit.games.blackbox import BlackBoxAudit
from dpaudit.results import AuditResult

__version__ = "0.1.0"

__all__ = [
    "AuditResult", "Curve", "EpsDeltaDP", "Family", "GaussianDP", "LaplaceDP", "NumericCurve",
    "SubsampledGaussianDP", "dpsgd_curve", "resolve_family", "__version__",
    "audit_one_run", "BlackBoxAudit",
]
