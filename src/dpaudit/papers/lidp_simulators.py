"""Simulators of the LiDP paper's experiments (Pillutla et al., "Unleashing the Power of
Randomization in Auditing Differentially Private ML", NeurIPS 2023, §4-5 and App. E).

* :func:`gaussian_lidp_scores` -- vectorised exact simulator of the Gaussian sum mechanism
  with unit-sphere canaries (Pillutla et al. §4, App. E.1), with three samplers: "direct" (draw the
  d-dimensional vectors), "wishart" (exact, cost independent of d, via the Bartlett
  decomposition of the Gram matrix; LiDP notes §2.11) and "iid" (the d >> K approximation
  x ~ N(1, sigma^2 + (K-1)/d), y ~ N(0, sigma^2 + (K-1)/d));
* :func:`gaussian_sigma_for_epsilon` / :func:`gaussian_rdp_epsilon` -- the paper's noise
  calibration (RDP -> DP conversion of Balle et al. 2020, Thm 21; Pillutla et al. App. E.1);
* :class:`LogisticDPSGD` -- a small vectorised DP-SGD trainer (logistic regression on
  synthetic data, Poisson sampling, per-example clipping) used by the DP-SGD experiment with
  random-gradient and ClipBKD canaries (the mechanisms package's DPSGDSimulator is a
  one-run white-box channel with Dirac canaries, which does not fit Algorithm 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from dpaudit.games.lidp import MODES, ClipBKDCanaries, LiDPScores, RandomGradientCanaries
from dpaudit.mechanisms.base import as_rng
from dpaudit.search import solve_monotone
from dpaudit.validation import check_choice, check_count, check_delta, check_positive

__all__ = ["gaussian_lidp_scores", "gaussian_rdp_epsilon", "gaussian_sigma_for_epsilon",
           "dpsgd_rdp_epsilon", "dpsgd_noise_for_epsilon", "LogisticDPSGD", "dpsgd_lidp_scores"]


# ----------------------------------------------------------------------------- Gaussian

def gaussian_rdp_epsilon(sigma: float, delta: float) -> float:
    """eps_delta <= inf_{a>1} a/(2 sigma^2) + log(1/(a delta))/(a-1) + log(1 - 1/a) for the
    Gaussian mechanism with L2 sensitivity 1 and noise sigma ((a, a/(2 sigma^2))-RDP; Balle et
    al. 2020, Thm 21; Pillutla et al. App. E.1).  Minimised over a by bounded Brent in log(a -
    1)."""
    s = check_positive("sigma", sigma)
    d = check_delta(delta)
    if d == 0:
        return math.inf

    def f(t: float) -> float:
        a = 1.0 + math.exp(t)
        return a / (2 * s * s) + math.log(1 / (a * d)) / (a - 1) + math.log1p(-1 / a)

    res = optimize.minimize_scalar(f, bounds=(-12.0, 12.0), method="bounded",
                                   options={"xatol": 1e-10})
    return float(res.fun)


def gaussian_sigma_for_epsilon(epsilon: float, delta: float) -> float:
    """Noise sigma with :func:`gaussian_rdp_epsilon` (sigma, delta) = epsilon (Pillutla et al. App.
    E.1;
    reproduces the reference table, e.g. sigma^2 = 4.62 at eps = 2, delta = 1e-5)."""
    e = check_positive("epsilon", epsilon)
    d = check_delta(delta)
    if d == 0:
        raise ValueError("delta must be > 0 for the RDP calibration")
    # eps(sigma) is decreasing: solve in log sigma
    return float(math.exp(solve_monotone(lambda t: -gaussian_rdp_epsilon(math.exp(t), d), -e,
                                         -6.0, 8.0)))


def _gram_bartlett(rng: np.random.Generator, b: int, big_n: int, d: int) -> np.ndarray:
    """b Wishart_N(d, I) Gram matrices W = L L^T of N standard Gaussian vectors in R^d
    (Bartlett: L_ii^2 ~ chi^2_{d-i+1}, L_ij ~ N(0,1) for i > j); requires d >= N."""
    L = np.tril(rng.standard_normal((b, big_n, big_n)), -1)
    diag = np.sqrt(rng.chisquare(d - np.arange(big_n), size=(b, big_n)))
    i = np.arange(big_n)
    L[:, i, i] = diag
    return L @ np.swapaxes(L, 1, 2)


def gaussian_lidp_scores(n: int, k: int, sigma: float, d: int, *,
                         rng: np.random.Generator | int, m: int | None = None,
                         method: str = "auto", mode: str = "add_remove",
                         chunk_elems: int = 4_000_000) -> LiDPScores:
    """LiDP game on the Gaussian sum mechanism A(D) = sum_{z in D} z + sigma xi, D = {0_d},
    with unit-sphere canaries and score <c, A(D)> (Pillutla et al. §4, App. E.1; the reference
    simulator of LiDP notes §2.11, which reuses one noise vector xi for the D_0 and D_1 runs of a
    trial -- allowed because x and y get separate confidence bounds).

    x_k = <u_k, sum_{j<=K} u_j> + sigma <u_k, xi>;  y_j = <u'_j, sum_{2<=k<=K} u_k> +
    sigma <u'_j, xi> (add/remove; replace-one sums over all K canaries).

    ``method``: "direct" (O(N d) per trial), "wishart" (exact, O(N^3) per trial, independent of
    d; needs d >= N = K + m + 1), "iid" (approximation for d >> K, LiDP notes §2.11), or "auto"
    (the cheaper exact one).
    """
    n = check_count("n", n, minimum=1)
    k = check_count("k", k, minimum=1)
    m = k if m is None else check_count("m", m, minimum=1)
    s = check_positive("sigma", sigma)
    d = check_count("d", d, minimum=1)
    check_choice("method", method, ("auto", "direct", "wishart", "iid"))
    check_choice("mode", mode, MODES)
    g = as_rng(rng)
    big_n = k + m + 1
    if method == "auto":
        method = "wishart" if (d >= big_n and big_n * big_n < 3 * d) else "direct"
    if method == "wishart" and d < big_n:
        raise ValueError(f"method 'wishart' needs d >= K + m + 1 = {big_n}, got d = {d}")
    first = 0 if mode == "replace_one" else 1  # D_0 omits canary 1 in add/remove mode
    if method == "iid":
        sd = math.sqrt(s * s + (k - 1) / d)
        xs = 1.0 + sd * g.standard_normal((n, k))
        sd0 = math.sqrt(s * s + (k - first) / d)  # D_0 holds K - 1 canaries (add/remove)
        ys = sd0 * g.standard_normal((n, m))
        return LiDPScores(xs, ys, mode, {"method": "iid", "sigma": s, "d": d})
    xs = np.empty((n, k))
    ys = np.empty((n, m))
    per = big_n * (d if method == "direct" else big_n)
    step = max(1, chunk_elems // per)
    for a in range(0, n, step):  # chunks of trials (memory), everything else vectorised
        b = min(n, a + step)
        if method == "direct":
            v = g.standard_normal((b - a, big_n, d))
            u = v[:, : k + m] / np.linalg.norm(v[:, : k + m], axis=2, keepdims=True)
            z = v[:, k + m]
            s1 = u[:, :k].sum(axis=1) + s * z
            s0 = u[:, first:k].sum(axis=1) + s * z
            xs[a:b] = np.einsum("tkd,td->tk", u[:, :k], s1)
            ys[a:b] = np.einsum("tkd,td->tk", u[:, k:], s0)
        else:
            W = _gram_bartlett(g, b - a, big_n, d)
            dg = np.sqrt(np.diagonal(W, axis1=1, axis2=2))  # (t, N)
            G = W[:, : k + m, : k + m] / (dg[:, : k + m, None] * dg[:, None, : k + m])
            noise = W[:, k + m, : k + m] / dg[:, : k + m]  # <u_j, xi>
            xs[a:b] = G[:, :k, :k].sum(axis=2) + s * noise[:, :k]
            ys[a:b] = G[:, k:, first:k].sum(axis=2) + s * noise[:, k:]
    return LiDPScores(xs, ys, mode, {"method": method, "sigma": s, "d": d})


# ----------------------------------------------------------------------------- DP-SGD

#: RDP orders of the reference code (LiDP notes §2.12).
RDP_ORDERS = (1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5, *range(5, 64), 128, 256, 512)


def dpsgd_rdp_epsilon(noise_multiplier: float, sampling_rate: float, steps: int,
                      delta: float) -> float:
    """epsilon of T Poisson-subsampled Gaussian steps via dp_accounting's RDP accountant with
    the reference orders (LiDP notes §2.12)."""
    import logging

    import dp_accounting
    from dp_accounting import rdp

    check_positive("noise_multiplier", noise_multiplier)
    q = float(sampling_rate)
    if not 0 < q <= 1:
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate!r}")
    logging.getLogger("absl").setLevel(logging.ERROR)
    acc = rdp.RdpAccountant(list(RDP_ORDERS))
    acc.compose(dp_accounting.PoissonSampledDpEvent(
        q, dp_accounting.GaussianDpEvent(noise_multiplier)), check_count("steps", steps, minimum=1))
    return float(acc.get_epsilon(check_delta(delta)))


def dpsgd_noise_for_epsilon(epsilon: float, delta: float, sampling_rate: float,
                            steps: int) -> float:
    """Noise multiplier with :func:`dpsgd_rdp_epsilon` = epsilon (reference code: brentq on
    the RDP accountant; LiDP notes §2.12)."""
    e = check_positive("epsilon", epsilon)
    return float(math.exp(solve_monotone(
        lambda t: -dpsgd_rdp_epsilon(math.exp(t), sampling_rate, steps, delta), -e, -3.0, 5.0,
        xtol=1e-6, rtol=1e-8)))


@dataclass(frozen=True, eq=False)
class LogisticDPSGD:
    """Small vectorised DP-SGD trainer: multinomial logistic regression trained with Poisson
    sampling (rate q), per-example clipping to L2 norm C, Gaussian noise N(0, (sigma C)^2 I) on
    the clipped-gradient sum, divided by the expected batch size q N, plain SGD from theta = 0
    (Pillutla et al. §6 / App. F; LiDP notes §2.12), run for many models at once.

    The base dataset (``features`` (N, d), ``labels`` in 0..classes-1) is shared by every model;
    each model adds its own canaries: data-poisoning examples (lifted ClipBKD) and/or random
    gradient canaries, which replace a per-example clipped gradient and are sampled like an
    example (Pillutla et al. App. D.2).  Parameters are flattened (d + 1) * classes vectors
    (weights then bias).  Privacy (add/remove of one example or canary gradient):
    ``dpsgd_rdp_epsilon(noise_multiplier, sampling_rate, steps, delta)``.
    """

    features: np.ndarray
    labels: np.ndarray
    classes: int
    steps: int
    sampling_rate: float
    clip_norm: float
    noise_multiplier: float
    learning_rate: float

    def __post_init__(self) -> None:
        X = np.asarray(self.features, dtype=float)
        if X.ndim != 2 or X.size == 0 or not np.isfinite(X).all():
            raise ValueError("features must be a finite, non-empty (N, d) matrix")
        y = np.asarray(self.labels)
        if y.shape != (X.shape[0],) or (y < 0).any() or (y >= self.classes).any():
            raise ValueError("labels must be N integers in [0, classes)")
        object.__setattr__(self, "features", X)
        object.__setattr__(self, "labels", y.astype(int))
        check_count("classes", self.classes, minimum=2)
        check_count("steps", self.steps, minimum=1)
        check_positive("sampling_rate", self.sampling_rate, upper=1.0)
        check_positive("clip_norm", self.clip_norm)
        check_positive("noise_multiplier", self.noise_multiplier)
        check_positive("learning_rate", self.learning_rate)

    @classmethod
    def synthetic(cls, *, n_examples: int = 200, dim: int = 20, classes: int = 4,
                  epsilon: float = 4.0, delta: float = 1e-5, steps: int = 60,
                  sampling_rate: float = 0.1, clip_norm: float = 1.0,
                  learning_rate: float = 0.5, rng: np.random.Generator | int) -> LogisticDPSGD:
        """A Gaussian-mixture classification task (class means on a sphere of radius 2) with
        the noise multiplier calibrated to (epsilon, delta) by the RDP accountant."""
        g = as_rng(rng)
        n_examples = check_count("n_examples", n_examples, minimum=2)
        means = g.standard_normal((classes, dim))
        means *= 2.0 / np.linalg.norm(means, axis=1, keepdims=True)
        y = g.integers(0, classes, n_examples)
        X = means[y] + g.standard_normal((n_examples, dim))
        sigma = dpsgd_noise_for_epsilon(epsilon, delta, sampling_rate, steps)
        return cls(X, y, classes, steps, sampling_rate, clip_norm, sigma, learning_rate)

    @property
    def n_params(self) -> int:
        return (self.features.shape[1] + 1) * self.classes

    def epsilon(self, delta: float) -> float:
        return dpsgd_rdp_epsilon(self.noise_multiplier, self.sampling_rate, self.steps, delta)

    @staticmethod
    def _softmax_residual(z: np.ndarray, onehot: np.ndarray, axis: int) -> np.ndarray:
        """softmax(z) - onehot along ``axis`` (in place on z)."""
        z -= z.max(axis=axis, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=axis, keepdims=True)
        z -= onehot
        return z

    def train(self, rng: np.random.Generator | int, models: int, *,
              canary_features: np.ndarray | None = None,
              canary_labels: np.ndarray | None = None,
              canary_mask: np.ndarray | None = None,
              gradient_canaries: np.ndarray | None = None,
              gradient_mask: np.ndarray | None = None) -> np.ndarray:
        """Train ``models`` models at once; returns final parameters (models, n_params).

        canary_features (M, Kc, d), canary_labels (M, Kc): data-poisoning canaries;
        gradient_canaries (M, Kg, n_params): random gradient canaries; the masks (M, K*) say
        which canaries each model actually holds.  The base-data products are single BLAS
        calls over all models (layout (N, classes, M): models innermost).
        """
        g = as_rng(rng)
        M = check_count("models", models, minimum=1)
        X, y = self.features, self.labels
        N, d = X.shape
        C = self.classes
        W = np.zeros((d, C, M))
        b = np.zeros((C, M))
        onehot = (y[:, None] == np.arange(C)[None, :]).astype(float)[:, :, None]  # (N, C, 1)
        xn2 = ((X * X).sum(axis=1) + 1.0)[:, None]  # ||(x, 1)||^2, (N, 1)
        has_c = canary_features is not None
        if has_c:
            cx = np.asarray(canary_features, float)  # (M, Kc, d)
            cy = np.asarray(canary_labels, int)
            cm = (np.ones(cy.shape, bool) if canary_mask is None
                  else np.asarray(canary_mask, bool))
            c_onehot = (cy[..., None] == np.arange(C)).astype(float)  # (M, Kc, C)
            cxn2 = (cx * cx).sum(axis=2) + 1.0
            cxt = np.swapaxes(cx, 1, 2)
        has_g = gradient_canaries is not None
        if has_g:
            gc = np.asarray(gradient_canaries, float)
            gm = (np.ones(gc.shape[:2], bool) if gradient_mask is None
                  else np.asarray(gradient_mask, bool))
        q, clip = self.sampling_rate, self.clip_norm
        noise = self.noise_multiplier * clip
        scale = self.learning_rate / (q * N)
        for _ in range(self.steps):  # loop over SGD steps; models/examples are vectorised
            R = self._softmax_residual((X @ W.reshape(d, C * M)).reshape(N, C, M) + b, onehot,
                                       axis=1)
            norm = np.sqrt(xn2 * (R * R).sum(axis=1))  # (N, M)
            w = (g.random((N, M)) < q) * np.minimum(1.0, clip / np.maximum(norm, 1e-300))
            R *= w[:, None, :]
            gW = (X.T @ R.reshape(N, C * M)).reshape(d, C, M)
            gb = R.sum(axis=0)
            if has_c:
                Wm = np.transpose(W, (2, 0, 1))  # (M, d, C)
                Rc = self._softmax_residual(cx @ Wm + b.T[:, None, :], c_onehot, axis=2)
                nc = np.sqrt(cxn2 * (Rc * Rc).sum(axis=2))
                wc = cm * (g.random(cm.shape) < q) * np.minimum(1.0,
                                                                clip / np.maximum(nc, 1e-300))
                Rc *= wc[..., None]
                gW += np.transpose(cxt @ Rc, (1, 2, 0))
                gb += Rc.sum(axis=1).T
            if has_g:
                sel = (gm & (g.random(gm.shape) < q)).astype(float)
                gg = np.matmul(sel[:, None, :], gc)[:, 0]  # (M, P), P = d*C (+ C bias)
                gW += gg[:, : d * C].reshape(M, d, C).transpose(1, 2, 0)
                gb += gg[:, d * C:].T
            gW += noise * g.standard_normal(gW.shape)
            gb += noise * g.standard_normal(gb.shape)
            W -= scale * gW
            b -= scale * gb
        return np.concatenate([np.transpose(W, (2, 0, 1)).reshape(M, d * C), b.T], axis=1)

    def loss(self, theta: np.ndarray, features: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Cross-entropy of each model (theta (M, P)) on its own examples (M, k, d), (M, k)."""
        M = theta.shape[0]
        d = self.features.shape[1]
        W = theta[:, : d * self.classes].reshape(M, d, self.classes)
        b = theta[:, d * self.classes:]
        z = np.einsum("mkd,mdc->mkc", features, W) + b[:, None, :]
        lse = special.logsumexp(z, axis=2)
        return lse - np.take_along_axis(z, np.asarray(labels)[..., None], axis=2)[..., 0]

    def accuracy(self, theta: np.ndarray) -> np.ndarray:
        """Training accuracy of each model on the base data."""
        M = theta.shape[0]
        d = self.features.shape[1]
        W = theta[:, : d * self.classes].reshape(M, d, self.classes)
        z = np.einsum("nd,mdc->mnc", self.features, W) + theta[:, None, d * self.classes:]
        return (z.argmax(axis=2) == self.labels[None, :]).mean(axis=1)


def dpsgd_lidp_scores(sim: LogisticDPSGD, canary: str, n: int, k: int, *,
                      rng: np.random.Generator | int, m: int | None = None,
                      mode: str = "add_remove", clipbkd_p: int | None = None,
                      clipbkd_alpha: float = 4.0, clipbkd_label: int = 0) -> LiDPScores:
    """LiDP game on :class:`LogisticDPSGD` (Pillutla et al. §6, Algorithm 1), all models trained in
    one vectorised run.

    ``canary="gradient"``: random gradient canaries on the sphere of radius clip_norm, score
    -cos(c, theta_T) (Pillutla et al. Eq. 24 with the reference code's cosine statistic).
    ``canary="clipbkd"``: lifted ClipBKD examples alpha v_j with the p tail right singular
    vectors of the base data (default p = d // 2) and label ``clipbkd_label``; score = -loss
    (Pillutla et al. Eq. 22-23).  Higher score = member.
    """
    check_choice("canary", canary, ("gradient", "clipbkd"))
    check_choice("mode", mode, MODES)
    n = check_count("n", n, minimum=1)
    k = check_count("k", k, minimum=1)
    m = k if m is None else check_count("m", m, minimum=1)
    g = as_rng(rng)
    two = mode == "add_remove"
    M = 2 * n if two else n
    mask = np.ones((M, k), bool)
    if two:
        mask[n:, k - 1] = False  # null models hold c_1..c_{K-1}
    if canary == "gradient":
        samp = RandomGradientCanaries(sim.n_params, sim.clip_norm)
        can = samp.sample(g, n * (k + m)).reshape(n, k + m, -1)
        ins = np.concatenate([can[:, :k]] * (2 if two else 1))
        theta = sim.train(g, M, gradient_canaries=ins, gradient_mask=mask)
        th = theta / np.maximum(np.linalg.norm(theta, axis=1, keepdims=True), 1e-300)
        unit = can / np.linalg.norm(can, axis=2, keepdims=True)
        xs = -np.einsum("tkp,tp->tk", unit[:, :k], th[:n])
        ys = -np.einsum("tkp,tp->tk", unit[:, k:], th[n:] if two else th)
    else:
        d = sim.features.shape[1]
        p = d // 2 if clipbkd_p is None else clipbkd_p
        samp_c = ClipBKDCanaries.from_data(sim.features, p, clipbkd_alpha, clipbkd_label)
        fx, fy = samp_c.sample(g, n * (k + m))
        fx = fx.reshape(n, k + m, d)
        fy = fy.reshape(n, k + m)
        cx = np.concatenate([fx[:, :k]] * (2 if two else 1))
        cy = np.concatenate([fy[:, :k]] * (2 if two else 1))
        theta = sim.train(g, M, canary_features=cx, canary_labels=cy, canary_mask=mask)
        xs = -sim.loss(theta[:n], fx[:, :k], fy[:, :k])
        ys = -sim.loss(theta[n:] if two else theta, fx[:, k:], fy[:, k:])
    return LiDPScores(xs, ys, mode, {"canary": canary, "k": k, "m": m})
