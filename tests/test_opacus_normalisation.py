"""Opacus's data-dependent divisor and sampling rate (dpaudit.training.opacus_normalisation).

References are independent of the module: Opacus's own classes (``BatchSampler`` length,
``UniformWithReplacementSampler`` length) plus the one line of ``make_private`` that cannot be
called alone (``int(len(dataset) * (1 / len(dp_loader)))``), real ``make_private`` runs, and
numerical integration of the two Gaussians' densities.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpaudit.training.opacus_normalisation import (
    affected_fraction,
    divisor_leaks,
    leaking_sizes,
    normalisation_finding,
    opacus_arithmetic,
    scale_pair_epsilon,
)

#: DataLoader batch sizes users pick.
USER_BATCH_SIZES = (1, 2, 8, 10, 16, 32, 50, 64, 100, 128, 256, 500, 512, 1000, 1024)


def _opacus_release(n: int, b: int) -> tuple[int, int]:
    """(len(DataLoader), expected_batch_size) through Opacus's and PyTorch's own code."""
    from opacus.utils.uniform_sampler import UniformWithReplacementSampler
    from torch.utils.data import BatchSampler, SequentialSampler

    k = len(BatchSampler(SequentialSampler(range(n)), batch_size=b, drop_last=False))
    steps = len(UniformWithReplacementSampler(num_samples=n, sample_rate=1 / k))
    return k, int(n * (1 / steps))          # privacy_engine.py: int(len(dataset) * sample_rate)


@pytest.mark.slow
def test_divisor_leaks_agrees_with_opacus_for_every_n_up_to_10000() -> None:
    n_max = 10_000
    for b in USER_BATCH_SIZES:
        rel = [_opacus_release(n, b) for n in range(1, n_max + 2)]
        ref = np.array([(n > 1 and rel[n - 2] != rel[n - 1]) or rel[n] != rel[n - 1]
                        for n in range(1, n_max + 1)])
        got = leaking_sizes(b, n_max)
        assert got.shape == ref.shape and np.array_equal(got, ref), b
        assert affected_fraction(b, 100, 5000) == pytest.approx(ref[99:5000].mean(), abs=0)
        for n in (1, 2, 3, 49, 98, 185, 999, 2450, n_max):
            assert divisor_leaks(n, b) == ref[n - 1]
            assert opacus_arithmetic(n, b).release == rel[n - 1]


def test_the_cases_the_plain_formula_misses() -> None:
    # float truncation and len(DPDataLoader) = int(1 / (1 / k)) (92 for k = 93)
    assert opacus_arithmetic(2450, 50).divisor == 49 and opacus_arithmetic(2451, 50).divisor == 49
    assert opacus_arithmetic(98, 2).divisor == 1 and opacus_arithmetic(784, 16).divisor == 15
    a = opacus_arithmetic(185, 2)
    assert (a.loader_batches, a.steps_per_epoch, a.divisor) == (93, 92, 2)
    assert a.accountant_rate == 1 / 92 and a.sample_rate == 1 / 93
    assert opacus_arithmetic(49, 1).divisor == 0 and normalisation_finding(49, 1).zero_divisor
    # the sampling rate alone moves (divisor 49 on both sides)
    assert divisor_leaks(2450, 50) and opacus_arithmetic(2451, 50).loader_batches == 50
    assert not divisor_leaks(25, 10) and divisor_leaks(3, 2) and divisor_leaks(2, 3)


@pytest.mark.slow
def test_arithmetic_matches_make_private() -> None:
    import logging
    import warnings

    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    logging.getLogger("opacus").setLevel(logging.ERROR)
    for n, b in ((3, 2), (2, 3), (98, 2), (185, 2), (187, 2), (2450, 50), (784, 16),
                 (999, 50), (49, 1)):
        torch.manual_seed(0)
        model = torch.nn.Linear(2, 3, bias=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, opt, loader = PrivacyEngine().make_private(
                module=model, optimizer=torch.optim.SGD(model.parameters(), lr=1.0),
                data_loader=DataLoader(TensorDataset(torch.randn(n, 2), torch.randn(n, 3)),
                                       batch_size=b),
                noise_multiplier=1.0, max_grad_norm=1.0)
        a = opacus_arithmetic(n, b)
        assert (len(loader), loader.sample_rate, opt.expected_batch_size) == (
            a.steps_per_epoch, a.sample_rate, a.divisor), (n, b)
        if a.divisor == 0:                               # the step divides by zero
            for xb, yb in loader:
                torch.nn.functional.mse_loss(model(xb), yb).backward()
                opt.step()
                break
            assert not torch.isfinite(model._module.weight).all()


def _delta_by_integration(eps: float, d: int, a: float) -> float:
    """max over both orders of the integral of (p - e^eps q)_+ for ||x||^2 / sigma^2 under
    N(0, a^2 I_d) and N(0, I_d) (numerical quadrature of the chi-square densities)."""
    p = lambda u: stats.chi2.pdf(u / a ** 2, d) / a ** 2   # noqa: E731
    q = lambda u: stats.chi2.pdf(u, d)                      # noqa: E731
    hi = a ** 2 * (d + 60 * math.sqrt(d) + 200)
    one = integrate.quad(lambda u: max(p(u) - math.exp(eps) * q(u), 0.0), 0, hi,
                         limit=400, epsabs=1e-13)[0]
    two = integrate.quad(lambda u: max(q(u) - math.exp(eps) * p(u), 0.0), 0, hi,
                         limit=400, epsabs=1e-13)[0]
    return max(one, two)


@pytest.mark.slow
@pytest.mark.parametrize(("d", "divisors"), [(1, (1, 2)), (4, (2, 3)), (20, (49, 50))])
def test_scale_pair_epsilon_against_integration(d: int, divisors: tuple[int, int]) -> None:
    delta = 1e-3
    eps = scale_pair_epsilon(d, divisors, delta)
    a = max(divisors) / min(divisors)
    assert _delta_by_integration(eps, d, a) == pytest.approx(delta, rel=1e-5)
    assert _delta_by_integration(eps * 0.99, d, a) > delta
    assert scale_pair_epsilon(d, (7, 7), delta) == 0.0


def test_the_documented_settings() -> None:
    # docs/training.md: 4,000 weights at divisors 1 vs 2, 20,000 at 49 vs 50 (delta 1e-5)
    assert scale_pair_epsilon(4000, (1, 2), 1e-5) == pytest.approx(3816.88, abs=0.01)
    assert scale_pair_epsilon(20_000, (49, 50), 1e-5) == pytest.approx(25.407, abs=1e-3)
    f = normalisation_finding(999, 50, weights=20_000)
    msg = f.message()
    assert f.leaks and f.relative_change == pytest.approx(0.02)
    for part in ("N = 999", "batch size 50", "= 49", "N = 1000 gives 50", "2.0%",
                 "epsilon = 25.41", "expected_batch_size = 50", 'loss_reduction="sum"'):
        assert part in msg, part
    assert "does not depend" in normalisation_finding(25, 10).message()
    assert "divides by 0" in normalisation_finding(49, 1).message()
    assert "sampling rate moves" in normalisation_finding(2450, 50).message()
    # MNIST (60,000) and CIFAR-10 (50,000) leak exactly at the batch sizes that divide them
    for n in (60_000, 50_000):
        for b in (64, 100, 128, 256, 512, 1000, 1024):
            assert divisor_leaks(n, b) == (n % b == 0), (n, b)


@pytest.mark.parametrize(("fn", "kwargs", "name"), [
    (opacus_arithmetic, {"n": 0, "batch_size": 2}, "n"),
    (opacus_arithmetic, {"n": 5, "batch_size": 0}, "batch_size"),
    (leaking_sizes, {"batch_size": 2, "n_max": 3, "n_min": 5}, "n_max"),
    (scale_pair_epsilon, {"weights": 0, "divisors": (1, 2), "delta": 1e-5}, "weights"),
    (scale_pair_epsilon, {"weights": 3, "divisors": (0, 2), "delta": 1e-5}, "divisors"),
    (normalisation_finding, {"n": 3, "batch_size": 2, "weights": 0}, "weights"),
])
def test_bad_input(fn, kwargs, name) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=name):
        fn(**kwargs)


@pytest.mark.slow
def test_normal_loop_releases_on_empty_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """N = 3, batch 2 (q = 1/2): one in eight first batches is empty; a normal loop (backward
    on a nan loss) still releases finite noise / divisor, so no trial fails."""
    import torch

    from dpaudit.training.opacus_normalisation import OpacusRun, SizeNeighbours

    sizes: list[int] = []
    mse = torch.nn.functional.mse_loss

    def recording(a, b):  # type: ignore[no-untyped-def]
        sizes.append(a.shape[0])
        return mse(a, b)

    monkeypatch.setattr(torch.nn.functional, "mse_loss", recording)
    data = SizeNeighbours(3, outputs=5)(np.random.default_rng(0))[0]
    run = OpacusRun(2, 2.0)
    outs = [run(data, np.random.default_rng(s)) for s in range(24)]
    assert sizes.count(0) >= 1 and len(sizes) == 24
    assert all(np.isfinite(o).all() and np.linalg.norm(o) > 0 for o in outs)


@pytest.mark.slow
def test_public_rate_and_divisor_audit_clean() -> None:
    """The fix (DPDataLoader at the public rate 1/2, expected_batch_size = 2) at N = 3 vs 4:
    200 trials read epsilon 0, no violation (the unfixed run reads 2.15 > 1.36:
    tests/test_training_pipeline.py)."""
    from dpaudit.engine import run_audit
    from dpaudit.training import opacus_epsilon
    from dpaudit.training.opacus_normalisation import normalisation_audit

    claim = opacus_epsilon(2.0, 0.5, 1, 1e-5)               # PRV, Opacus's default
    r = run_audit(normalisation_audit(3, 2, 2.0, fixed=True), trials=200, seed=0,
                  executor="inline", claimed_epsilon=claim, delta=1e-5)
    assert r.result.epsilon == 0.0 and not r.violation
