"""Equivalence of the fast paths behind Thm 3.5 at 1e7 targets with the reference computations.

* the windowed FFT Poisson-binomial (exact-length rows, halves pairing, per-chunk reduction)
  against the exact O(n^2) dynamic programme (small n: ties, extremes, tiny n), against the
  unwindowed FFT, and against the previous pairwise windowed product, reproduced below
  verbatim as the reference;
* ``beta_of_checked`` (in place) against the broadcasting ``beta``: bitwise equal;
* alpha(v) when T(1) rounds below 1 (the flat run below the FFT window) against brute force;
* the chunked pmf mode against ``np.argmax``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import fft as sfft

from dpaudit import risk
from dpaudit.risk.bounds import _alpha_all_brute, _alpha_all_tangent, _alpha_at, _pmf_mode
from dpaudit.risk.flipping import beta_of_checked
from dpaudit.stats import poisson_binomial as pb


def _pair_products_prev(polys: np.ndarray, direct_max: int) -> np.ndarray:
    a, b = polys[0::2], polys[1::2]
    length = a.shape[1]
    if length <= direct_max:
        prod = np.zeros((a.shape[0], 2 * length))
        for s in range(length):
            prod[:, s:s + length] += a[:, s:s + 1] * b
        return prod
    size = 2 * length
    spec = sfft.rfft(polys, size, axis=1)
    return sfft.irfft(spec[0::2] * spec[1::2], size, axis=1)


def _windowed_prev(p: np.ndarray, block: int = 256, chunk_blocks: int = 2048) -> np.ndarray:
    """The windowed product of the previous release (pairs 2i, 2i + 1; zero-padded rows)."""
    n = p.size
    nb = -(-n // block)
    pp = np.zeros(nb * block)
    pp[:n] = p
    blocks = pp.reshape(nb, block)
    mean = blocks.sum(axis=1)
    var = (blocks * (1 - blocks)).sum(axis=1)
    degree = np.full(nb, block, dtype=np.int64)
    parts = []
    for c in range(0, nb, chunk_blocks):
        sl = slice(c, min(c + chunk_blocks, nb))
        q = blocks[sl].reshape(-1)
        polys = np.empty((q.size, 2))
        polys[:, 0] = 1.0 - q
        polys[:, 1] = q
        while polys.shape[1] < 2 * block:
            polys = _pair_products_prev(polys, 8)
        parts.append(pb._trim(polys, np.zeros(polys.shape[0], dtype=np.int64), mean[sl],
                              var[sl], degree[sl]))
    width = max(x.shape[1] for x, _ in parts)
    polys = np.concatenate([np.pad(x, ((0, 0), (0, width - x.shape[1]))) for x, _ in parts])
    off = np.concatenate([o for _, o in parts])
    while polys.shape[0] > 1:
        if polys.shape[0] % 2:
            polys = np.vstack([polys, np.eye(1, polys.shape[1])])
            off = np.append(off, 0)
            mean, var = np.append(mean, 0.0), np.append(var, 0.0)
            degree = np.append(degree, 0)
        polys = _pair_products_prev(polys, 64)
        off = off[0::2] + off[1::2]
        mean, var = mean[0::2] + mean[1::2], var[0::2] + var[1::2]
        degree = degree[0::2] + degree[1::2]
        polys, off = pb._trim(polys, off, mean, var, degree)
    out = np.zeros(n + 1)
    o = int(off[0])
    w = min(polys.shape[1], n + 1 - o)
    out[o:o + w] = polys[0, :w]
    out = np.clip(out, 0.0, None)
    return out / out.sum()


def _tail(pmf: np.ndarray) -> np.ndarray:
    return np.cumsum(pmf[::-1])[::-1]


def _cases(rng: np.random.Generator) -> list[np.ndarray]:
    return [
        rng.uniform(0.01, 0.3, 1),
        rng.uniform(0.01, 0.3, 2),
        rng.uniform(0, 1, 3),
        rng.uniform(0.01, 0.3, 255),
        rng.uniform(0.01, 0.3, 256),
        rng.uniform(0.01, 0.3, 257),
        rng.beta(0.5, 2.0, 1000),
        np.full(700, 0.37),  # all equal
        rng.choice([0.02, 0.2, 0.6], 1500),  # a few distinct priors
        np.r_[np.zeros(300), np.ones(200), rng.uniform(0, 1, 600)],  # 0/1 extremes
        rng.permutation(np.r_[np.zeros(300), np.ones(200), rng.uniform(0, 1, 600)]),
        np.zeros(513),
        np.ones(300),
        rng.uniform(0, 1e-6, 900),  # tiny probabilities
        rng.uniform(0.01, 0.99, 2600),
    ]


def test_windowed_equals_exact_dp_on_small_inputs() -> None:
    rng = np.random.default_rng(11)
    for p in _cases(rng):
        got = pb._pmf_fft_windowed(p)
        ref = pb._pmf_dp(p)
        # FFT round-off is absolute, ~1e-16 of the largest coefficient; the DP is exact to ulps
        np.testing.assert_allclose(got, ref, rtol=0, atol=2e-15)
        np.testing.assert_allclose(_tail(got), _tail(ref), rtol=0, atol=1e-13)
        assert got.min() >= 0


@pytest.mark.slow
def test_windowed_equals_previous_windowed_and_unwindowed_fft() -> None:
    rng = np.random.default_rng(12)
    for p in (rng.uniform(0.01, 0.3, 65_536), rng.beta(0.5, 2.0, 40_000)):
        got = pb._pmf_fft_windowed(p)
        m = 1 << int(np.ceil(np.log2(p.size)))
        polys = np.zeros((m, 2))
        polys[:, 0] = 1.0
        polys[: p.size, 0] = 1.0 - p
        polys[: p.size, 1] = p
        while polys.shape[0] > 1:
            polys = pb._pair_products(polys)
        full = np.clip(polys[0, : p.size + 1], 0.0, None)
        full /= full.sum()
        np.testing.assert_allclose(got, full, rtol=0, atol=1e-15)
        np.testing.assert_allclose(_tail(got), _tail(full), rtol=0, atol=1e-12)
    for p in (rng.uniform(0.01, 0.3, 200_003),
              np.r_[rng.choice([0.05, 0.5], 150_000), np.zeros(5000), np.ones(3000)],
              np.full(100_000, 0.2), rng.uniform(0.0, 1.0, 120_000)):
        got = pb.poisson_binomial_pmf(p, method="fft")
        prev = _windowed_prev(p)
        np.testing.assert_allclose(got, prev, rtol=0, atol=1e-15)
        np.testing.assert_allclose(_tail(got), _tail(prev), rtol=0, atol=1e-12)
        s = np.arange(got.size)
        assert float((s * got).sum()) == pytest.approx(p.sum(), rel=1e-11)


def test_thm35_v_ub_unchanged_at_200k_targets() -> None:
    # the windowed FFT's round-off moved; the bound and its v_UB did not
    p = np.random.default_rng(13).uniform(0.01, 0.3, 200_000)
    b = risk.beta(p, 1.0)
    tb = risk.thm35_tail(p, 1.0, 1e-9)
    t_prev = np.zeros(p.size + 2)
    t_prev[:-1] = _tail(_windowed_prev(b))
    t_prev[0] = 1.0
    t_prev = np.minimum.accumulate(np.clip(t_prev, 0, 1))
    prev = np.minimum(1.0, t_prev + _alpha_all_tangent(t_prev) * p.size * 1e-9)
    prev[0], prev[-1] = 1.0, 0.0
    prev = np.minimum.accumulate(prev)
    np.testing.assert_allclose(tb.tail, prev, rtol=0, atol=1e-12)
    conf = [0.05, 0.5, 0.95, 0.99]
    np.testing.assert_array_equal(tb.v_ub(conf), risk.v_ub(prev, conf))


@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0, 7.5, 40.0, np.inf])
def test_beta_of_checked_is_bitwise_beta(eps: float) -> None:
    rng = np.random.default_rng(14)
    p = np.r_[0.0, 1.0, 1e-300, 1e-12, 0.5, 1 - 1e-16, rng.uniform(0, 1, 1000),
              rng.uniform(0, 1e-8, 100)]
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.where(p <= 0, 0.0, np.where(p >= 1, 1.0, 1 / (1 + np.exp(-eps) * (1 - p) / p)))
    got = beta_of_checked(p, float(eps))
    pp, ee = np.broadcast_arrays(p, np.full(p.shape, eps))
    bc = risk.beta(pp.reshape(-1, 1), ee.reshape(-1, 1)).reshape(-1)  # the broadcasting path
    np.testing.assert_array_equal(got, bc)
    np.testing.assert_array_equal(risk.beta(p, eps), got)
    if np.isfinite(eps):
        np.testing.assert_allclose(got, ref, rtol=1e-12)


@pytest.mark.slow
def test_alpha_when_t1_rounds_below_one() -> None:
    # below the windowed FFT's support the summed pmf is a constant that may round below 1:
    # T = c < 1 on [1, u0] (a flat run), T(0) = 1.  Tangent search == brute force.
    rng = np.random.default_rng(15)
    for n, lo in [(1500, 600), (3000, 2500), (800, 1)]:
        t = pb.poisson_binomial_tail(rng.uniform(0.2, 0.6, n))
        t[1:lo + 1] = np.nextafter(1.0, 0.0) if lo > 1 else t[1]
        t = np.minimum.accumulate(t)
        t[t < 1e-15] = 0.0
        np.testing.assert_allclose(_alpha_all_tangent(t), _alpha_all_brute(t), rtol=1e-12,
                                   atol=1e-15)
        for stride in (1, 7, 256):
            np.testing.assert_array_equal(_alpha_all_tangent(t, chunk=331, stride=stride),
                                          _alpha_all_tangent(t))
    # a real windowed tail (above 65,536 targets): pointwise brute force at selected v
    p = np.random.default_rng(3).uniform(0.01, 0.3, 70_000)
    t = pb.poisson_binomial_tail(risk.beta(p, 1.0))
    # the flat run sits at 1 or one ulp below it, depending on the FFT library's rounding;
    # both cases are checked (the run is pushed one ulp below 1 when it rounded to 1)
    assert 1.0 - 1e-14 < t[1] <= 1.0 and t[1] == t[20_000]
    flat = (np.arange(t.size) >= 1) & (t == t[1])
    for tt in (t, np.where(flat, np.nextafter(1.0, 0.0), t)):
        alpha = _alpha_all_tangent(tt)
        nz = np.flatnonzero(np.diff(tt) < 0)
        vs = np.unique(np.r_[1, 2, 3, nz[0] - 1, nz[0], nz[0] + 1, nz[0] + 2, nz[-1],
                             nz[-1] + 2, rng.integers(nz[0], nz[-1] + 3, 80),
                             rng.integers(1, 70_001, 40)])
        vs = vs[(vs >= 1) & (vs <= p.size)]
        np.testing.assert_allclose(alpha[vs], _alpha_at(tt, vs), rtol=1e-12, atol=1e-15)


def test_pmf_mode_chunked_is_first_argmax() -> None:
    rng = np.random.default_rng(16)
    for t in (pb.poisson_binomial_tail(rng.uniform(0, 1, 300)),
              pb.poisson_binomial_tail(np.full(9, 0.5)),
              np.r_[1.0, 0.75, 0.5, 0.25, 0.0],  # four equal pmf values: the first wins
              np.r_[1.0, 0.0]):
        want = int(np.argmax(t[:-1] - t[1:]))
        for chunk in (1, 2, 3, 7, 1 << 20):
            assert _pmf_mode(t, chunk) == want


def _summary_reference(eps: float, delta: float, priors: np.ndarray, c: float,
                       tau: float) -> dict:
    """The per-target part of ``risk_summary`` as computed before the one-prior shortcut."""
    per_target = np.atleast_1d(risk.single_target_bound(priors, eps, delta, theorem="thm3.5"))
    post = np.atleast_1d(risk.single_target_bound(priors, eps, delta, theorem="cor3.4"))
    inner = (priors > 0) & (priors < 1)
    adv = np.atleast_1d(risk.advantage(post[inner], priors[inner])) if inner.any() \
        else np.zeros(1)
    prot = np.atleast_1d(risk.epsilon_protect(priors[inner], tau, delta)) if inner.any() \
        else np.array([np.nan])
    return {"success_bound": float(per_target.max()), "advantage": float(adv.max()),
            "success_bound_mean": float(per_target.mean()),
            "expected_successes_bound": float(np.atleast_1d(risk.beta(priors, eps)).sum()),
            "advantage_mean": float(adv.mean()),
            "epsilon_protect_min": float(np.nanmin(prot)) if np.isfinite(prot).any()
            else None}


@pytest.mark.parametrize(("n", "prior", "eps", "delta"), [
    (1, 0.1, 1.0, 1e-5), (7, 0.3, 0.5, 0.0), (1000, 0.1, 1.0, 1e-9),
    (12_345, 0.013, 4.0, 1e-6), (70_001, 0.77, 2.0, 1e-7), (300, 0.0, 1.0, 1e-5),
    (300, 1.0, 1.0, 1e-5)])
def test_risk_summary_one_prior_shortcut_is_exact(n: int, prior: float, eps: float,
                                                  delta: float) -> None:
    from dpaudit.risk.summary import risk_summary

    priors = np.full(n, prior)
    out = risk_summary(eps, delta, priors, confidence=0.95, tau=0.05)
    ref = _summary_reference(eps, delta, priors, 0.95, 0.05)
    got = {k: out[k] if k in out else out["details"][k] for k in ref}
    assert got == ref  # bit for bit
    # and the heterogeneous path (no shortcut) still gives the reference values
    het = np.r_[priors[:-1], np.nextafter(prior, 0.5)] if n > 1 else priors
    out = risk_summary(eps, delta, het, confidence=0.95, tau=0.05)
    ref = _summary_reference(eps, delta, het, 0.95, 0.05)
    assert {k: out[k] if k in out else out["details"][k] for k in ref} == ref


def _run(f):  # noqa: ANN001, ANN202
    try:
        return ("ok", f())
    except ValueError as e:
        return ("error", str(e))


def _both_parsers(text: str) -> tuple[tuple, tuple | None]:
    """(outcome of the general parser, outcome of the fast path + the same validation, or
    None where the fast path declines), on a file holding ``text`` (UTF-8)."""
    import tempfile
    from pathlib import Path

    from dpaudit.io import read_text
    from dpaudit.risk.priors import _parse_priors, _read_one_number_per_line

    with tempfile.TemporaryDirectory() as d:
        pth = Path(d) / "p.txt"
        pth.write_bytes(text.encode("utf-8"))
        general = _run(lambda: _parse_priors(read_text(pth), pth, 0))
        fast = _read_one_number_per_line(pth, 0)
        if fast is not None:
            fast = _run(lambda: risk.heterogeneous_priors(fast, name="prior-file values"))
        return general, fast


@pytest.mark.parametrize("text", [
    "0.1\n0.25\n0.5\n", "0.1\r\n0.25\r\n\r\n0.5", "\n\n0.1\n\n\n0.2\n", "prior\n0.1\n0.3\n",
    "1_0e-1\n5e-1\n", "0\n1\n0.5\n", "1e-300\n0.9999999999999999\n", "7\n", "0.1\r0.2\r",
    "0.3\n0.1 0.2\n", "0.3\n\t0.4\n", "# c\n0.1\n", "0.1,0.2\n0.3,0.4\n", '"0.1"\n"0.2"\n',
    "p;q\n0.1;0.2\n", "0.1\nabc\n", "name\n", "0.1\nnan\n", "inf\n0.2\n", "1.5\n0.2\n",
    "\ufeff0.1\n", "0.1\xa0\n0.2\n", "header\n0.1\nheader2\n", "", "\n\n", "-0.0\n0.2\n",
    "\n\nprior\n0.1\n\n0.2", "\r\n\r\nprior\r\n0.4\r\n", "prior\n", "prior\n\n\n",
    "0.5", "prior\n0.1\n0.2\n0.3\n0.4", "0.1\n\r0.2\n",
])
def test_prior_file_fast_path_equals_general_parser(text: str) -> None:
    general, fast = _both_parsers(text)
    if fast is None:
        return  # not a plain file: the general parser is used, as before
    assert fast[0] == general[0]
    if fast[0] == "ok":
        np.testing.assert_array_equal(fast[1], general[1])
    else:
        assert fast[1] == general[1]  # the same error message


def test_prior_file_fast_path_taken_for_plain_files(tmp_path) -> None:  # noqa: ANN001
    rng = np.random.default_rng(17)
    p = rng.uniform(0, 1, 5000)
    text = "prior\n" + "\n".join(repr(float(x)) for x in p) + "\n"
    general, fast = _both_parsers(text)
    assert general[0] == "ok" and fast is not None and fast[0] == "ok"
    np.testing.assert_array_equal(fast[1], general[1])
    np.testing.assert_array_equal(fast[1], p)
    f = tmp_path / "p.txt"
    f.write_text(text)
    np.testing.assert_array_equal(risk.load_priors(f), p)


def test_prior_file_fast_path_number_formats() -> None:
    # NumPy's parser against float() on many written forms of the same numbers
    rng = np.random.default_rng(18)
    x = np.r_[rng.uniform(0, 1, 3000), 10 ** rng.uniform(-320, 0, 2000), 0.0, 1.0]
    for fmt in (repr, "{:.17g}".format, "{:.5e}".format, "{:.3f}".format, "{:E}".format):
        text = "\r\n".join(fmt(float(v)) for v in x)
        general, fast = _both_parsers(text)
        assert fast is not None and general[0] == fast[0] == "ok"
        np.testing.assert_array_equal(fast[1], general[1])


def _epsilon_protect_reference(p, tau, delta, theorem):  # noqa: ANN001, ANN202
    """epsilon_protect as written before the in-place version."""
    pa = np.asarray(p, dtype=float)
    post = pa + tau * (1.0 - pa)
    b = post - delta if theorem == "cor3.4" else \
        (post - delta) / (1.0 - delta) if theorem == "thm3.5" else post
    with np.errstate(divide="ignore", invalid="ignore"):
        def logit(x):  # noqa: ANN001, ANN202
            return np.log(x) - np.log1p(-x)
        return np.where(b < pa, np.nan,
                        np.maximum(0.0, logit(np.clip(b, 1e-300, 1.0)) - logit(pa)))


@pytest.mark.parametrize("theorem", ["cor3.4", "thm3.5", "thm3.2"])
@pytest.mark.parametrize(("tau", "delta"), [(0.05, 0.0), (0.05, 1e-5), (0.3, 0.2), (0.01, 0.5)])
def test_epsilon_protect_in_place_is_bitwise(theorem: str, tau: float, delta: float) -> None:
    rng = np.random.default_rng(19)
    p = np.r_[1e-300, 1e-12, 0.5, 1 - 1e-16, rng.uniform(0, 1, 2000),
              10 ** rng.uniform(-30, 0, 500)]
    got = risk.epsilon_protect(p, tau, delta, theorem=theorem)
    np.testing.assert_array_equal(got, _epsilon_protect_reference(p, tau, delta, theorem))
    for x in (0.1, 0.97, 1e-9):
        ref = float(_epsilon_protect_reference(x, tau, delta, theorem))
        out = risk.epsilon_protect(x, tau, delta, theorem=theorem)
        assert isinstance(out, float)
        assert out == ref or (np.isnan(out) and np.isnan(ref))


@pytest.mark.parametrize(("n", "q"), [(1, 0.3), (2, 0.0), (3, 1.0), (2001, 0.1), (70_000, 0.37),
                                      (5000, 1e-9), (4000, 1 - 1e-12)])
def test_binomial_pmf_in_place_is_bitwise(n: int, q: float) -> None:
    from scipy import special

    k = np.arange(n + 1, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.exp(special.gammaln(n + 1.0) - special.gammaln(k + 1)
                     - special.gammaln(n - k + 1) + special.xlogy(k, q)
                     + special.xlog1py(n - k, -q))
    np.testing.assert_array_equal(pb._binomial_pmf(n, q), ref)
