"""What the valid default nulls cost (issue 21): tightness and time against the GDP null.

Three measurements, each on the same observations under both nulls, in the same run:

A. User scores, Gaussian mechanism mu = 2 (true eps = 9.9973 at delta = 1e-5; the scores of
   studies/peers.py): ``audit_one_run`` at its default null ("eps_delta", valid for every
   (eps, delta) claim) against ``family="gdp"`` (the old default, an assumption that happens to
   hold here).  Ratio = bound / true eps.
B. User scores, pure-DP mechanisms (randomized response and Laplace at eps = 1): the default
   against the GDP null, which over-claims on them (the bug of issue 21).
C. DP-SGD claims (the demo's white-box simulator: sigma = 1, q = 0.01, T = 1000, 5,000 canaries,
   likelihood-ratio score; correct, and with the backprop-clipping bug |B| = 16): the claim's
   own DP-SGD family (``dpaudit.curves.accounting.dpsgd_family``, valid) against the GDP null
   (not valid for a DP-SGD claim), plus the family's one-off construction time.

Run: ``PYTHONPATH=src python studies/default_null.py [--quick]``.  CPU seconds
(``time.process_time``) of the calls; figures are printed as a table.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

import dpaudit as da
from dpaudit.curves import GaussianDP, claim_family
from dpaudit.curves.accounting import dpsgd_family

DELTA = 1e-5
METHODS = ("tight", "bits", "steinke", "mahloujifar")


def _cpu(fn):
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def _rows(member, score, family, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {}
        for m in METHODS:
            (r,), s = _cpu(lambda m=m: da.audit_one_run(member, score, DELTA, methods=(m,),
                                                        family=family, **kw))
            out[m] = (r.epsilon, s)
        return out


def _print(title, true_eps, ns, default, gdp, label_a="default eps_delta", label_b="gdp"):
    print(f"\n{title}")
    print(f"| n | method | {label_a}: eps (ratio) | CPU s | {label_b}: eps (ratio) | CPU s | "
          f"time ratio |")
    print("|---|---|---|---:|---|---:|---:|")
    for n in ns:
        for m in METHODS:
            (ea, sa), (eb, sb) = default[n][m], gdp[n][m]
            ra = f"{ea / true_eps:.2f}" if true_eps else "-"
            rb = f"{eb / true_eps:.2f}" if true_eps else "-"
            print(f"| {n:.0e} | {m} | {ea:.4f} ({ra}) | {sa:.3f} | {eb:.4f} ({rb}) | {sb:.3f} | "
                  f"{sa / max(sb, 1e-9):.1f} |")


def part_a(ns):
    true = GaussianDP(2.0).epsilon(DELTA)
    d, g = {}, {}
    for n in ns:
        rng = np.random.default_rng(0)
        member = rng.random(n) < 0.5
        score = rng.standard_normal(n) + 2.0 * member
        d[n], g[n] = _rows(member, score, "eps_delta"), _rows(member, score, "gdp")
    _print(f"A. Gaussian mu = 2 (true eps {true:.4f}), user scores", true, ns, d, g)


def part_b(ns):
    for name in ("randomized_response", "laplace"):
        d, g = {}, {}
        for n in ns:
            rng = np.random.default_rng(0)
            m = rng.integers(0, 2, n)
            if name == "laplace":
                s = m + rng.laplace(0.0, 1.0, n)
            else:
                s = np.where(rng.random(n) < 1 / (1 + math.e), 1 - m, m).astype(float)
            d[n], g[n] = _rows(m, s, "eps_delta"), _rows(m, s, "gdp")
        _print(f"B. {name} eps = 1 (true eps 1), user scores: the GDP null over-claims", 1.0,
               ns, d, g)


def part_c(n):
    from dpaudit.mechanisms.dpsgd import DPSGDSimulator

    sig, q, steps = 1.0, 0.01, 1000
    claimed, s_claim = _cpu(lambda: da.dpsgd_curve(sig, q, steps).epsilon(DELTA))
    fam, s_fam = _cpu(lambda: claim_family(dpsgd_family(sig, q, steps, DELTA,
                                                        claimed_epsilon=claimed), DELTA))
    print(f"\nC. DP-SGD sigma = {sig}, q = {q}, T = {steps}, {n} canaries, white box, lr score; "
          f"claimed eps {claimed:.4f} (accountant: {s_claim:.1f} s CPU); DP-SGD family built in "
          f"{s_fam:.1f} s CPU ({fam.build.thetas.size} nodes, eps {fam.lo:.3f} .. {fam.hi:.3f})")
    d, g = {}, {}
    for flawed in (False, True):
        mech = DPSGDSimulator(noise_multiplier=sig, sampling_rate=q, steps=steps,
                              score_kind="lr", flaw="backprop_clipping" if flawed else None,
                              batch_size=16 if flawed else 1)
        obs = mech.simulate(n, np.random.default_rng(0))
        key = "flawed |B|=16" if flawed else "correct"
        d[key] = _rows(obs.member, obs.score, fam, bits_threshold=0.0)
        g[key] = _rows(obs.member, obs.score, "gdp", bits_threshold=0.0)
    print(f"(ratio = bound / claimed eps {claimed:.4f})")
    print("| run | method | dpsgd family: eps (ratio) | CPU s | gdp: eps (ratio) | CPU s | "
          "time ratio |")
    print("|---|---|---|---:|---|---:|---:|")
    for key in d:
        for m in METHODS:
            (ea, sa), (eb, sb) = d[key][m], g[key][m]
            print(f"| {key} | {m} | {ea:.4f} ({ea / claimed:.2f}) | {sa:.3f} | {eb:.4f} "
                  f"({eb / claimed:.2f}) | {sb:.3f} | {sa / max(sb, 1e-9):.1f} |")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller n (1e4 only)")
    a = p.parse_args(argv)
    ns = (10_000,) if a.quick else (10_000, 100_000, 1_000_000)
    part_a(ns)
    part_b((20_000,) if a.quick else (20_000, 100_000))
    part_c(5000)


if __name__ == "__main__":
    main()
