"""White-box DP-SGD simulator with Dirac gradient canaries (Bits Transmission §5, BT notes §6.4-6.5;
Tight One-Run §6.2 and App. A, TOR notes §3.4).

Model.  DP-SGD with Poisson sampling rate q, T steps, clipping norm C and noise multiplier
sigma releases per step the noisy clipped-gradient sum
    g~_t = sum_{i in B_t} CLP_C(grad_i) + N(0, sigma^2 C^2 I).
Canary i is a "Dirac gradient": its gradient is zero except on its own model coordinate c(i)
(one coordinate per canary, memoryless arrangement), large enough to be clipped to norm C.  It is
in the training set iff its secret bit b_i = 1.  Dividing coordinate c(i) of g~_t by C, the
adversary observes (BT notes §6.4, "synthetic simulator")
    y_{t,i} = b_i S_{t,i} + a_{t,i} + sigma Z_{t,i},   S_{t,i} ~ Bernoulli(q), Z ~ N(0, 1),
where a_{t,i} ~ N(0, background_std^2) optionally models the projection of the real training
examples' clipped gradients on coordinate c(i) (adversary-unknown randomness, which is what
makes real audits non-tight; Bits Transmission §3.5).  Each step is a Poisson-subsampled Gaussian
with
noise multiplier sigma for each canary, so the claimed guarantee is ``dpsgd_curve(sigma, q, T)``
(dp_accounting PLD, add/remove adjacency); without background gradients this is also the exact
trade-off of the white-box adversary with the optimal score.

Threat models and scores:
* ``threat="white_box"`` (every noisy step released, the setting of both seeds):
  ``score="sum"`` -- s_i = sum_t y_{t,i} - qT/2 (BT notes §6.4's suggested default, decoder
  threshold qT/2); ``score="lr"`` -- the optimal log-likelihood ratio (no background)
  s_i = sum_t log(1 - q + q exp((y_{t,i} - 1/2) / s^2)), s^2 = sigma^2 + background_std^2.
* ``threat="last_iterate"`` -- only the final parameters theta_T = theta_0 - eta sum_t g~_t / B
  are released.  For linear (SGD) updates the canary coordinate of theta_T is an affine function
  of sum_t y_{t,i}, so the score is the sum score; the true curve is then the trade-off between
  N(0, T s^2) and sum_k Binom(k; T, q) N(k, T s^2) (computed exactly, ``last_iterate_curve``).

Flaws (the flawed variants are built in :mod:`dpaudit.mechanisms.flawed`):
* ``"backprop_clipping"`` (BT notes §6.5; [38] in Bits Transmission): the implementation clips the
  batch-averaged per-example gradient, p = sum_i CLP_C(grad_i / |B|) + noise, with the noise still
  calibrated for sensitivity C/|B|.  With the canary gradient norm |B| C (BT notes §6.5's
  simulator choice) the canary contributes C while the noise is sigma C / |B|: in canary units
  y = b S + (sigma / |B|) Z, i.e. the true noise multiplier is sigma / |B|.
* ``"reused_noise"``: the same noise vector Z (one seed) is added at every step.  Then
  y_{t,i} - y_{t',i} = b_i (S_{t,i} - S_{t',i}) exactly, and the canary is revealed whenever it
  was sampled in some but not all steps (probability 1 - q^T - (1-q)^T).  Score: the range
  max_t y_{t,i} - min_t y_{t,i} (plus a tiny sum-score tie breaker).

Performance: steps are processed in chunks of ``chunk_steps`` (memory O(chunk_steps * n)); no
T x d x batch tensor is ever formed.  1e4 canaries x 1,000 steps take about a second.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import ndtr, ndtri

from dpaudit.canaries.scores import log_bernoulli_mgf
from dpaudit.curves import NumericCurve, SubsampledGaussianDP, dpsgd_curve
from dpaudit.curves.base import Curve
from dpaudit.mechanisms.base import SimulatedMechanism
from dpaudit.validation import (
    check_choice,
    check_count,
    check_nonnegative,
    check_positive,
    check_probability,
)

__all__ = ["DPSGDSimulator", "last_iterate_curve", "reused_noise_curve", "THREATS", "SCORES",
           "DPSGD_FLAWS"]

THREATS = ("white_box", "last_iterate")
SCORES = ("sum", "lr")
DPSGD_FLAWS = ("backprop_clipping", "reused_noise")


def last_iterate_curve(noise_std: float, sampling_rate: float, steps: int) -> Curve:
    """Exact trade-off of sum_t y_t: P = N(0, T s^2) vs Q = sum_k Binom(k; T, q) N(k, T s^2).

    The likelihood ratio sum_k w_k exp((k y - k^2/2) / (T s^2)) is increasing in y, so the
    Neyman-Pearson tests are thresholds t = sqrt(T) s Phi^{-1}(1 - alpha) and
    f(alpha) = sum_k w_k Phi((t - k) / (sqrt(T) s)).  (Ordered pair; asymmetric.)
    """
    s = math.sqrt(steps) * noise_std
    k = np.arange(steps + 1)
    w = stats.binom.pmf(k, steps, sampling_rate)
    keep = w > 1e-16
    k, w = k[keep].astype(float), w[keep] / w[keep].sum()

    def f(alpha: np.ndarray) -> np.ndarray:
        a = np.asarray(alpha, dtype=float)
        t = -ndtri(np.clip(a, 0.0, 1.0)) * s
        return (w * ndtr((t[..., None] - k) / s)).sum(axis=-1)

    return NumericCurve(f, symmetric=False, label="LastIterateCurve",
                        params={"noise_multiplier": noise_std, "sampling_rate": sampling_rate,
                                "steps": float(steps)})


def reused_noise_curve(noise_multiplier: float, sampling_rate: float, steps: int) -> Curve:
    """True trade-off of white-box DP-SGD whose noise is reused at every step (no background).

    The output of a bit-0 canary is a constant sequence sigma Z.  A bit-1 canary's sequence is
    non-constant (bit revealed) w.p. p_r = 1 - q^T - (1-q)^T; otherwise constant, equal to
    sigma Z w.p. (1-q)^T or 1 + sigma Z w.p. q^T.  Restricted to constant sequences the pair is a
    subsampled Gaussian with mu = 1/sigma and rate q' = q^T / ((1-q)^T + q^T), so
        f(alpha) = m_c * f_{SGM(1/sigma, q')}(alpha),  m_c = (1-q)^T + q^T,
    and epsilon(delta) = inf for every delta < p_r.
    """
    q, t = sampling_rate, steps
    log_never = t * math.log1p(-q) if q < 1 else -math.inf
    log_always = t * math.log(q)
    m_c = math.exp(log_never) + math.exp(log_always)
    q_eff = 1.0 if not math.isfinite(log_never) else 1.0 / (1.0 + math.exp(log_never
                                                                           - log_always))
    q_eff = min(max(q_eff, 1e-300), 1.0)
    base = SubsampledGaussianDP(1.0 / noise_multiplier, q_eff)
    return NumericCurve(lambda a: m_c * base.tradeoff(a), symmetric=False,
                        label="ReusedNoiseCurve",
                        params={"noise_multiplier": noise_multiplier, "sampling_rate": q,
                                "steps": float(t), "reveal_probability": 1.0 - m_c})


@dataclass(frozen=True, repr=False)
class DPSGDSimulator(SimulatedMechanism):
    """Vectorised white-box / last-iterate DP-SGD simulator with Dirac canaries (see module).

    Args:
      noise_multiplier: sigma (claimed; the noise std is sigma * C).
      sampling_rate: Poisson sampling rate q.
      steps: T.
      clip_norm: C (all outputs are reported in units of C, so C only scales the raw output).
      background_std: std of the background-gradient projection per step, in units of C.
      threat: "white_box" or "last_iterate".
      score_kind: "sum" or "lr" (white box only).
      flaw: None, "backprop_clipping" or "reused_noise".
      batch_size: |B| of the backprop-clipping flaw (expected batch size).
      chunk_steps: steps per chunk (memory O(chunk_steps * n)).
    """

    noise_multiplier: float = 1.0
    sampling_rate: float = 0.01
    steps: int = 1000
    clip_norm: float = 1.0
    background_std: float = 0.0
    threat: str = "white_box"
    score_kind: str = "sum"
    flaw: str | None = None
    batch_size: int = 1
    chunk_steps: int = 64

    def __post_init__(self) -> None:
        check_positive("noise_multiplier", self.noise_multiplier)
        check_probability("sampling_rate", self.sampling_rate, open_low=True)
        check_count("steps", self.steps, minimum=1)
        check_positive("clip_norm", self.clip_norm)
        check_nonnegative("background_std", self.background_std)
        check_choice("threat", self.threat, THREATS)
        check_choice("score_kind", self.score_kind, SCORES)
        if self.threat == "last_iterate" and self.score_kind != "sum":
            raise ValueError("score_kind must be 'sum' when threat='last_iterate' (the final "
                             "parameters determine only the summed canary coordinate)")
        if self.flaw is not None:
            check_choice("flaw", self.flaw, DPSGD_FLAWS)
        check_count("batch_size", self.batch_size, minimum=1)
        check_count("chunk_steps", self.chunk_steps, minimum=1)

    @property
    def name(self) -> str:  # type: ignore[override]
        return "dpsgd" if self.flaw is None else f"dpsgd[{self.flaw}]"

    @property
    def params(self) -> Mapping[str, Any]:
        p: dict[str, Any] = {"noise_multiplier": self.noise_multiplier,
                             "sampling_rate": self.sampling_rate, "steps": self.steps,
                             "clip_norm": self.clip_norm, "threat": self.threat,
                             "score": self.score_kind}
        if self.background_std:
            p["background_std"] = self.background_std
        if self.flaw == "backprop_clipping":
            p["batch_size"] = self.batch_size
        return p

    @property
    def effective_noise(self) -> float:
        """Noise std in canary units: sigma, or sigma/|B| under the backprop-clipping bug."""
        if self.flaw == "backprop_clipping":
            return self.noise_multiplier / self.batch_size
        return self.noise_multiplier

    @cached_property
    def claimed_curve(self) -> Curve:
        return dpsgd_curve(self.noise_multiplier, self.sampling_rate, self.steps)

    @cached_property
    def curve(self) -> Curve:
        """True guarantee (exact without background gradients; with them it is conservative).

        Note: for the backprop-clipping flaw the PLD with noise sigma/|B| can take tens of
        seconds to compose (it is computed lazily, only when asked for).
        """
        sig = self.effective_noise
        if self.flaw == "reused_noise":
            return reused_noise_curve(sig, self.sampling_rate, self.steps)
        if self.threat == "last_iterate":
            return last_iterate_curve(sig, self.sampling_rate, self.steps)
        if self.flaw is None:
            return self.claimed_curve
        return dpsgd_curve(sig, self.sampling_rate, self.steps)

    # -- simulation ---------------------------------------------------------------------------
    def run(self, bits: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Simulate T steps in chunks; returns the per-canary statistics the adversary computes
        from the released steps ("sum", and "lr" or "max"/"min" as needed), in units of C.

        When only the sum is needed (score "sum", white box or last iterate, no reused noise)
        it is drawn in closed form: Binomial(T, q) * bit + N(0, T (sigma^2 + bg^2)), O(n).

        The released per-step vectors are reduced on the fly (never stored); the reductions
        are exactly the decoder's sufficient statistics, so scoring them equals scoring the
        full transcript.
        """
        n = bits.size
        q, sig, bg = self.sampling_rate, self.effective_noise, self.background_std
        b = bits.astype(bool)
        want_lr = self.threat == "white_box" and self.score_kind == "lr"
        reuse = self.flaw == "reused_noise"
        if not (want_lr or reuse):
            # Only the sum is needed: over T steps it is Binomial(T, q) * bit plus
            # N(0, T (sigma^2 + bg^2)) per canary, drawn directly in O(n) (no loop over steps).
            # Same law as the step-by-step simulation, different random stream.
            total = (rng.binomial(self.steps, q, size=n) * b
                     + math.sqrt(self.steps * (sig**2 + bg**2)) * rng.standard_normal(n))
            return {"sum": total * self.clip_norm}
        total = np.zeros(n)
        lr = np.zeros(n) if want_lr else None
        hi = np.full(n, -np.inf) if reuse else None
        lo = np.full(n, np.inf) if reuse else None
        fixed_noise = sig * rng.standard_normal(n) if reuse else None
        s2 = sig ** 2 + bg ** 2
        done = 0
        while done < self.steps:
            k = min(self.chunk_steps, self.steps - done)
            y = (rng.random((k, n)) < q) & b
            y = y.astype(float)
            if reuse:
                y += fixed_noise
            else:
                y += sig * rng.standard_normal((k, n))
            if bg > 0:
                y += bg * rng.standard_normal((k, n))
            total += y.sum(axis=0)
            if want_lr:
                lr += log_bernoulli_mgf((y - 0.5) / s2, q).sum(axis=0)
            if reuse:
                assert hi is not None and lo is not None
                np.maximum(hi, y.max(axis=0), out=hi)
                np.minimum(lo, y.min(axis=0), out=lo)
            done += k
        out: dict[str, np.ndarray] = {"sum": total * self.clip_norm}
        if want_lr:
            out["lr"] = np.asarray(lr)
        if reuse:
            assert hi is not None and lo is not None
            out["range"] = (hi - lo) * self.clip_norm
        return out

    def score(self, output: Mapping[str, np.ndarray]) -> np.ndarray:
        centred = output["sum"] / self.clip_norm - self.sampling_rate * self.steps / 2
        if self.flaw == "reused_noise":
            # range > 0 reveals an included canary; the scaled sum breaks ties among the rest.
            rng_ = output["range"] / self.clip_norm
            tie = centred / (1.0 + np.abs(centred).max())
            return np.where(rng_ > 1e-9, rng_, 0.0) + 1e-3 * tie
        if self.threat == "white_box" and self.score_kind == "lr":
            return output["lr"]
        return centred
