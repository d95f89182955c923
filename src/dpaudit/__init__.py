"""dpaudit: empirical privacy auditing of differential privacy, and attack-risk bounds.

    import dpaudit as da
    da.GaussianDP(mu=1.0).epsilon(1e-5)          # 4.3772
    from dpaudit import estimators as E
    E.multi_run(member, score, delta=1e-5, confidence=0.95)

The names below are imported on first use (PEP 562), so ``import dpaudit`` -- and the command
line's ``dpaudit --version`` -- do not import NumPy or SciPy.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

#: public name -> module defining it
_EXPORTS = {
    "Curve": "dpaudit.curves", "EpsDeltaDP": "dpaudit.curves", "Family": "dpaudit.curves",
    "GaussianDP": "dpaudit.curves", "LaplaceDP": "dpaudit.curves",
    "NumericCurve": "dpaudit.curves", "SubsampledGaussianDP": "dpaudit.curves",
    "dpsgd_curve": "dpaudit.curves", "resolve_family": "dpaudit.curves",
    "audit_one_run": "dpaudit.estimators.one_run",
    "audit_multi_run": "dpaudit.games.audit",
    "Audit": "dpaudit.outcome", "Claim": "dpaudit.claim",
    "BlackBoxAudit": "dpaudit.games.blackbox",
    "AuditResult": "dpaudit.results",
}

__all__ = [
    "AuditResult", "Curve", "EpsDeltaDP", "Family", "GaussianDP", "LaplaceDP", "NumericCurve",
    "SubsampledGaussianDP", "dpsgd_curve", "resolve_family", "__version__",
    "audit_one_run", "audit_multi_run", "Audit", "Claim", "BlackBoxAudit",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpaudit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
