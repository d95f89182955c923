"""Noise primitives of the pure-Python layers of SmartNoise SQL and PipelineDP.

Both draw their noise in compiled code (OpenDP's Rust core, PyDP's C++), but the value, the
sensitivity and epsilon reach that code through Python calls, which are recorded here:

* SmartNoise SQL: ``Mechanism.release(vals)`` of each aggregate's mechanism
  (``snsql/sql/_mechanisms``), declared sensitivity = ``scale * epsilon`` for Laplace (the scale
  SmartNoise computed from the column bounds with OpenDP), and ``self.sensitivity`` when set;
* PipelineDP: ``dp_computations.apply_laplace_mechanism(value, eps, l1_sensitivity)`` and
  ``apply_gaussian_mechanism(value, eps, delta, l2_sensitivity)`` (the additive-noise entry
  points of its aggregates) and ``AdditiveMechanism.add_noise`` (Laplace and Gaussian).

Identical randomness is not needed for these checks: the inputs are recorded before the
compiled noise is drawn.
"""

from __future__ import annotations

from typing import Any

from dpaudit.greybox.recorder import Primitive

__all__ = ["smartnoise_primitives", "pipelinedp_primitives"]


def _sn_release(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    vals: Any = args[0] if args else kwargs.get("vals")
    out: dict[str, Any] = {"epsilon": obj.epsilon, "delta": obj.delta, "value": list(vals)}
    if getattr(obj, "scale", None) is not None and str(obj.mechanism).endswith("laplace"):
        out["sensitivity"] = float(obj.scale) * float(obj.epsilon)
    return out


def smartnoise_primitives() -> tuple[Primitive, ...]:
    return (
        Primitive("snsql.Laplace.release", "snsql.sql._mechanisms.laplace.Laplace", "release",
                  _sn_release),
        Primitive("snsql.Gaussian.release", "snsql.sql._mechanisms.gaussian.Gaussian",
                  "release", _sn_release),
    )


def _pdp_laplace(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    value, eps, sens = (list(args) + [None] * 3)[:3]
    return {"value": kwargs.get("value", value), "epsilon": kwargs.get("eps", eps),
            "sensitivity": kwargs.get("l1_sensitivity", sens)}


def _pdp_gaussian(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    value, eps, delta, sens = (list(args) + [None] * 4)[:4]
    return {"value": kwargs.get("value", value), "epsilon": kwargs.get("eps", eps),
            "delta": kwargs.get("delta", delta),
            "sensitivity": kwargs.get("l2_sensitivity", sens)}


def _pdp_add_noise(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    value = args[0] if args else kwargs.get("value")
    out: dict[str, Any] = {"value": value, "sensitivity": float(obj.sensitivity)}
    eps = getattr(getattr(obj, "_mechanism", None), "epsilon", None)
    if eps is not None:
        out["epsilon"] = float(eps)
    return out


def pipelinedp_primitives() -> tuple[Primitive, ...]:
    m = "pipeline_dp.dp_computations"
    return (
        Primitive("pipeline_dp.apply_laplace_mechanism", m, "apply_laplace_mechanism",
                  _pdp_laplace, method=False),
        Primitive("pipeline_dp.apply_gaussian_mechanism", m, "apply_gaussian_mechanism",
                  _pdp_gaussian, method=False),
        Primitive("pipeline_dp.AdditiveMechanism.add_noise", f"{m}.AdditiveMechanism",
                  "add_noise", _pdp_add_noise),
    )
