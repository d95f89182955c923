"""dpaudit against ``jax_privacy.auditing`` on the same scores, side by side (issue 14).

    PYTHONPATH=src /work/peers-venv/bin/python studies/peers.py [--sizes 1e4 1e5 1e6]
        [--budget 300] [--mu 2.0]

jax-privacy pulls in jax (~600 MB), so it is NOT a dpaudit dependency (not even ``dev``): it is
the optional extra ``peers`` (``pip install dpaudit[peers]``), best installed in a scratch venv.
Without it the script says so and prints dpaudit's figures alone.

Scores: one run of the Gaussian mechanism with n canaries, each included with probability 1/2,
score ~ N(mu * included, 1), mu = 2 (true epsilon at delta = 1e-5: GaussianDP(2).epsilon(1e-5)).
Every method gets the same (member, score) arrays, delta = 1e-5 and 95% confidence
(significance 0.05).

Pairs compared (the same published method on both sides):

=========================  =================================  ==================================
method                     dpaudit                            jax_privacy.auditing
=========================  =================================  ==================================
Steinke et al. one run     ``audit_one_run(.., ["steinke"])``  ``epsilon_one_run``
Mahloujifar et al. f-DP    ``audit_one_run(.., ["mahloujifar"])`` ``epsilon_one_run_fdp``
classical Clopper-Pearson  ``multi_run(.., "bonferroni")``     ``epsilon_clopper_pearson``
GDP estimate               ``multi_run(.., estimate="gdp")``   ``epsilon_from_gdp``
tight (Tight One-Run)           ``audit_one_run(.., ["tight"])``    (none)
bits (Bits Transmission)            ``audit_one_run(.., ["bits"])``     (none)
=========================  =================================  ==================================

The two sides do not make the same statistical choices, so the times are not for identical
work: jax_privacy's one-run methods test *every* threshold (Bonferroni over n + 1 thresholds,
guesses "in" only, k_- = 0) and run a Brent search per threshold in Python (with a precision
heuristic that skips most of them); dpaudit tests a fixed grid of 7 guess counts (Bonferroni
over 7, k_+ = k_- = r/2).  The multi-run methods use the same statistic on both sides
(Clopper-Pearson, Bonferroni) over different thresholds: jax_privacy's ROC convex-hull frontier
(chosen with the labels), dpaudit's label-free geometric grid (pooled-score ranks 1, 2, 3, 5,
8, ... from both ends plus 30 quantiles; ``grid="quantiles"`` for the 1000 quantiles used
before).  Each method is
timed once (wall and CPU seconds); a peer call longer than ``--budget`` seconds is abandoned and
reported as such.  Figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit import estimators as E
from dpaudit.curves import GaussianDP
from dpaudit.estimators.one_run import audit_one_run

DELTA, CONF = 1e-5, 0.95

try:  # optional: the `peers` extra
    from jax_privacy import auditing as jpa
except ImportError:  # pragma: no cover - depends on the environment
    jpa = None


class _Budget(Exception):
    pass


def _timed(fn: Callable[[], float], budget: float) -> tuple[float | None, float, float]:
    """(value or None if over budget, wall seconds, CPU seconds)."""
    def alarm(*_: Any) -> None:
        raise _Budget

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
    w, c = time.perf_counter(), time.process_time()
    try:
        val: float | None = float(fn())
    except _Budget:
        val = None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return val, time.perf_counter() - w, time.process_time() - c


def _scores(n: int, mu: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    member = rng.random(n) < 0.5
    return member, rng.standard_normal(n) + mu * member


def _dpaudit_methods(member: np.ndarray, score: np.ndarray) -> dict[str, Callable[[], float]]:
    def one(m: str) -> Callable[[], float]:
        return lambda: audit_one_run(member, score, DELTA, CONF, methods=[m])[0].epsilon
    return {
        "steinke": one("steinke"),
        "mahloujifar": one("mahloujifar"),
        "clopper_pearson": lambda: E.multi_run(member, score, DELTA, CONF).epsilon,
        "gdp_estimate": lambda: E.multi_run(member, score, DELTA, CONF,
                                            estimate="gdp").epsilon,
        "tight": one("tight"),
        "bits": one("bits"),
    }


def _peer_methods(member: np.ndarray, score: np.ndarray) -> dict[str, Callable[[], float]]:
    if jpa is None:
        return {}
    sig = 1 - CONF

    def aud() -> Any:  # built inside every timed call: it sorts the scores, as dpaudit does
        return jpa.CanaryScoreAuditor(score[member], score[~member])
    return {
        "steinke": lambda: aud().epsilon_one_run(sig, DELTA),
        "mahloujifar": lambda: aud().epsilon_one_run_fdp(sig, DELTA),
        "clopper_pearson": lambda: aud().epsilon_clopper_pearson(sig, DELTA, one_sided=False),
        "gdp_estimate": lambda: aud().epsilon_from_gdp(sig, DELTA),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    ap.add_argument("--budget", type=float, default=300.0,
                    help="seconds allowed per peer call before it is abandoned")
    ap.add_argument("--mu", type=float, default=2.0)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    true_eps = GaussianDP(args.mu).epsilon(DELTA)
    print(f"true epsilon (GaussianDP({args.mu:g}), delta={DELTA:g}) = {true_eps:.4f}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if jpa is None:
        print("jax_privacy is NOT installed: peer columns are empty.  Install the optional "
              "extra in a scratch venv:  python -m venv /tmp/peers && /tmp/peers/bin/pip "
              "install 'dpaudit[peers]'  (or pip install jax jaxlib jax-privacy)")
    else:
        import jax_privacy
        print(f"jax_privacy {getattr(jax_privacy, '__version__', '?')}")
    hdr = (f"{'n':>8} {'method':<16} {'dpaudit eps':>11} {'ratio':>6} {'wall s':>8} "
           f"{'cpu s':>8} | {'peer eps':>9} {'ratio':>6} {'wall s':>8} {'cpu s':>8} | "
           f"{'time peer/dpaudit':>17}")
    print(hdr)
    print("-" * len(hdr))
    for size in args.sizes:
        n = int(size)
        member, score = _scores(n, args.mu)
        t0 = time.process_time()
        np.argsort(score)
        sort_cpu = time.process_time() - t0
        ours = _dpaudit_methods(member, score)
        peers = _peer_methods(member, score)
        for name, fn in ours.items():
            e, w, c = _timed(fn, 1e6)
            line = (f"{n:>8} {name:<16} {e:>11.4f} {e / true_eps:>6.3f} {w:>8.3f} {c:>8.3f} | ")
            if name in peers:
                pe, pw, pc = _timed(peers[name], args.budget)
                if pe is None:
                    line += (f"{'>budget':>9} {'':>6} {pw:>8.1f} {pc:>8.1f} | "
                             f"{'> ' + format(pw / w, '.0f'):>17}")
                else:
                    line += (f"{pe:>9.4f} {pe / true_eps:>6.3f} {pw:>8.3f} {pc:>8.3f} | "
                             f"{pw / w:>17.1f}")
            else:
                line += f"{'-':>9} {'':>6} {'':>8} {'':>8} |"
            print(line, flush=True)
        print(f"{n:>8} {'np.argsort':<16} {'':>11} {'':>6} {'':>8} {sort_cpu:>8.3f} |")


if __name__ == "__main__":
    main()
