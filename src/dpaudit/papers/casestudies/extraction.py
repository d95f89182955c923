"""Case study 1: extracting canary secrets from a DP-trained n-gram language model (Beyond Worst
Case §5).

The attack game (Algorithm 1 of the paper with n targets):

1. ``n_targets`` canary documents "the pin of user 007 is <secret>" are added to a text corpus
   (the fixed, adversary-known records). Each secret is drawn independently from a prior over
   ``K`` candidate strings -- uniform digits, a Zipf password prior, or a PII-like prior,
   scaled down to the candidate set as in the paper ("scale down the distributions ... to 10
   possible digits", §5.2);
2. a character n-gram model is trained on corpus + canaries with the Gaussian mechanism
   calibrated to (epsilon, delta) (:mod:`dpaudit.papers.casestudies.ngram`); by default lazily, i.e.
   only the context rows that precede a secret are trained (as in the paper, after Stock et al.);
3. the extraction attack ranks the K candidates of each target by model likelihood
   ("model", the paper's attack: "the character with the highest probability assigned by the
   n-gram model"), optionally adding the log prior ("model+prior"), or by the exact Bayes
   posterior of the released noisy counts ("posterior", the strongest attacker that knows the
   mechanism, the corpus and the prior), and outputs its top ``guesses`` candidates;
4. success = the secret is among the guesses (exact match, k guesses).

Bounds (all from :mod:`dpaudit.risk`, never re-derived here): the attack-independent Thm 3.5
with p* = mass of the ``guesses`` heaviest candidates (n = 1: beta + (1 - beta) delta, the
paper's Fig. 3 "Theorem 3.3" line, BWC notes §8 item 9 option (a)); Cor 3.4 with the prior mass
of the guesses actually made (option (b)); the MMC bound with f = G_mu for uniform priors; and
for n targets the high-probability count v_UB(c) of Thm 3.5.

Monte Carlo: thousands of models per (epsilon, prior) are simulated exactly and in one batch.
The attack reads only the released rows whose contexts precede a candidate secret ("view
rows"); their released values are the (fixed) clipped corpus counts, plus the clipped canary
counts of the drawn secrets, plus independent N(0, s^2) noise -- the same numbers
:func:`dpaudit.papers.casestudies.ngram.train_dp_ngram` would release in those rows (same event and
clipping code; the noise of the other rows never reaches the attack).
``tests/test_papers_extraction.py`` checks the equality against full training.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit.curves import GaussianDP
from dpaudit.papers.casestudies.ngram import (
    NgramModel,
    NgramSpec,
    clip_scales,
    encode,
    ngram_noise_std,
    record_events,
)
from dpaudit.risk.bounds import TailBound, cor34_tail, single_target_bound, thm35_tail
from dpaudit.risk.comparators import mmc_bound
from dpaudit.risk.fdp import gdp_mu
from dpaudit.validation import check_choice, check_count, check_delta, check_positive

__all__ = [
    "CANARY_TEMPLATE", "SecretPrior", "digit_secret_prior", "canary_text", "ExtractionSetting",
    "ExtractionGame", "ExtractionResult", "run_extraction",
]

CANARY_TEMPLATE = "the pin of user {uid:03d} is {secret}"
ATTACKS = ("model", "model+prior", "posterior")


@dataclass(frozen=True)
class SecretPrior:
    """A prior over candidate secret strings of equal length: ``probs[c]`` for ``candidates[c]``."""

    candidates: tuple[str, ...]
    probs: np.ndarray
    name: str = "prior"

    def __post_init__(self) -> None:
        p = np.asarray(self.probs, dtype=float)
        if p.ndim != 1 or p.size != len(self.candidates) or p.size < 2:
            raise ValueError("probs must be 1-D with one entry per candidate (>= 2)")
        if np.any(~np.isfinite(p)) or np.any(p < 0) or abs(p.sum() - 1) > 1e-9:
            raise ValueError("probs must be a probability vector")
        if len({len(c) for c in self.candidates}) != 1 or len(set(self.candidates)) != p.size:
            raise ValueError("candidates must be distinct strings of equal length")
        object.__setattr__(self, "probs", p)

    @property
    def size(self) -> int:
        return len(self.candidates)

    def top_k_mass(self, k: int) -> float:
        """p* of exact match with k guesses: the mass of the k heaviest candidates."""
        return float(np.sort(self.probs)[::-1][:k].sum())


def digit_secret_prior(probs: Any, *, length: int | None = None, name: str = "prior",
                       seed: int = 7) -> SecretPrior:
    """Assign rank-ordered prior masses (e.g. ``ZipfPrior(1.1, 10).probs`` or
    ``password_prior().scaled_down(10).probs``) to the 10^length digit strings.

    Rank r goes to a fixed pseudo-random digit string (``default_rng(seed).permutation``), so
    the most likely secret is not "0". ``probs`` may be an array or a prior object with
    ``.probs`` (dpaudit.risk.priors.ExplicitPrior).
    """
    p = np.asarray(getattr(probs, "probs", probs), dtype=float)
    m = (int(round(math.log10(p.size))) if length is None
         else check_count("length", length, minimum=1))
    if 10 ** m != p.size:
        raise ValueError(f"probs must have 10^length entries; got {p.size}")
    strings = ["".join(t) for t in itertools.product("0123456789", repeat=m)]
    perm = np.random.default_rng(seed).permutation(p.size)
    cands = tuple(strings[i] for i in perm)
    return SecretPrior(cands, p / p.sum(), name=getattr(probs, "name", name) or name)


def canary_text(uid: int, secret: str) -> str:
    return CANARY_TEMPLATE.format(uid=uid, secret=secret)


@dataclass(frozen=True)
class ExtractionSetting:
    """One (epsilon, prior, attack) configuration of the extraction game."""

    epsilon: float
    delta: float = 1e-5
    n_targets: int = 1
    runs: int = 500
    attack: str = "model"
    guesses: int = 1
    clip: float = 1.0
    order: int = 8
    lazy: bool = True
    buckets: int = 1 << 22
    smoothing: float = 0.1

    def __post_init__(self) -> None:
        if not self.epsilon > 0:
            raise ValueError(f"epsilon must be > 0 (inf allowed); got {self.epsilon!r}")
        check_delta(self.delta)
        if self.delta == 0 and not math.isinf(self.epsilon):
            raise ValueError("delta must be > 0 for the Gaussian mechanism")
        check_count("n_targets", self.n_targets, minimum=1)
        if self.n_targets > 1000:
            raise ValueError("n_targets must be at most 1000 (3-digit user ids)")
        check_count("runs", self.runs, minimum=1)
        check_choice("attack", self.attack, ATTACKS)
        check_count("guesses", self.guesses, minimum=1)
        check_positive("clip", self.clip)
        check_count("order", self.order, minimum=2)

    @property
    def noise_std(self) -> float:
        """s = sqrt(2) clip / mu (see :func:`dpaudit.papers.casestudies.ngram.ngram_noise_std`)."""
        return ngram_noise_std(self.epsilon, self.delta, self.clip)

    @property
    def mu(self) -> float:
        return math.inf if math.isinf(self.epsilon) else gdp_mu(self.epsilon, self.delta)


@dataclass(frozen=True)
class ExtractionResult:
    """Per-run successes and the bounds they are compared with.

    ``success[r]``: number of targets extracted in run r (0..n); ``guess_prior[r, i]``: prior
    mass of the guesses made for target i (the p_i(z) of Cor 3.4); ``prior_success[r]``: the
    prior-only attack (top-k prior guesses) on the same secrets.
    """

    setting: ExtractionSetting
    prior_name: str
    p_star: float
    success: np.ndarray = field(repr=False)
    prior_success: np.ndarray = field(repr=False)
    guess_prior: np.ndarray = field(repr=False)
    k_candidates: int = 10
    uniform_prior: bool = False

    @property
    def n(self) -> int:
        return self.setting.n_targets

    @property
    def attack_rate(self) -> float:
        return float(self.success.mean() / self.n)

    @property
    def prior_rate(self) -> float:
        return float(self.prior_success.mean() / self.n)

    def thm35_rate_bound(self) -> float:
        """Per-target success-probability bound, Thm 3.5 at n = 1: beta(p*) + (1-beta) delta."""
        s = self.setting
        return float(single_target_bound(self.p_star, s.epsilon, s.delta, theorem="thm3.5"))

    def cor34_rate_bound(self) -> float:
        """Cor 3.4 at n = 1 over all (run, target) games: mean beta(p_i(z)) + delta."""
        s = self.setting
        return float(cor34_tail(self.guess_prior.reshape(-1, 1), s.epsilon, s.delta).tail[1])

    def mmc_rate_bound(self) -> float:
        """MMC single-canary bound with f = G_mu (uniform priors over K candidates, one guess
        only; NaN otherwise). The mechanism is exactly mu-GDP, so G_mu is its trade-off curve."""
        s = self.setting
        if not self.uniform_prior or s.guesses != 1:
            return math.nan
        if math.isinf(s.epsilon):
            return 1.0
        return float(mmc_bound(self.k_candidates, GaussianDP(s.mu)))

    def thm35_count_tail(self) -> TailBound:
        """Thm 3.5 for the n targets of one run (p*_i = p* for all i)."""
        s = self.setting
        return thm35_tail(np.full(self.n, self.p_star), s.epsilon, s.delta)

    def row(self) -> dict[str, Any]:
        s = self.setting
        tail = self.thm35_count_tail()
        v95 = int(tail.v_ub(0.95))
        return {
            "prior": self.prior_name, "epsilon": s.epsilon, "delta": s.delta, "mu": s.mu,
            "noise_std": s.noise_std, "attack": s.attack, "guesses": s.guesses,
            "n_targets": self.n, "runs": s.runs, "p_star": self.p_star,
            "attack_rate": self.attack_rate, "prior_rate": self.prior_rate,
            "attack_rate_se": float(self.success.std(ddof=1) / self.n / math.sqrt(s.runs))
            if s.runs > 1 else math.nan,
            "thm35_bound": self.thm35_rate_bound(), "cor34_bound": self.cor34_rate_bound(),
            "mmc_gmu_bound": self.mmc_rate_bound(), "v_ub_95": v95,
            "max_success": int(self.success.max()),
            "frac_runs_above_v_ub_95": float((self.success > v95).mean()),
        }


class ExtractionGame:
    """Precomputed view of the extraction game for one secret prior and setting (see module doc).

    Construction builds the canary documents for every (target, candidate), their clipped count
    events restricted to the view rows, and the corpus counts in those rows; :meth:`simulate`
    then plays ``runs`` independent games in one vectorised batch.
    """

    def __init__(self, corpus: Sequence[str], prior: SecretPrior, setting: ExtractionSetting
                 ) -> None:
        self.corpus = list(corpus)
        self.prior = prior
        self.setting = setting
        self.spec = NgramSpec(order=setting.order, buckets=setting.buckets)
        n, k = setting.n_targets, prior.size
        if setting.guesses >= k:
            raise ValueError(f"guesses must be smaller than the number of candidates ({k})")
        v = self.spec.vocab
        cand_codes = np.stack([encode(c) for c in prior.candidates])  # (K, m)
        self.m = cand_codes.shape[1]
        self.cand_codes = cand_codes
        prefixes = [canary_text(i, "") for i in range(n)]
        pre_codes = np.stack([encode(p) for p in prefixes])  # (n, P) -- equal length
        full = np.concatenate([np.broadcast_to(pre_codes[:, None, :], (n, k, pre_codes.shape[1])),
                               np.broadcast_to(cand_codes[None], (n, k, self.m))], axis=2)
        ctx = self.spec.context_rows(full)[:, :, pre_codes.shape[1]:]  # (n, K, m) rows
        self.view_rows = np.unique(ctx)
        self.ctx_view = np.searchsorted(self.view_rows, ctx)  # (n, K, m) view-row index
        trained = self.view_rows if setting.lazy else None
        # fixed records (corpus): clipped counts in the view rows
        ev = record_events(self.corpus, self.spec, trained)
        w = ev.count * clip_scales(ev, setting.clip)[ev.rec] if ev.n_records else ev.count
        self.base = self._to_view(ev.cell, w).reshape(-1)  # (n_view * V,)
        # canary documents for every (target, candidate)
        docs = [canary_text(i, c) for i in range(n) for c in prior.candidates]
        ev = record_events(docs, self.spec, trained)
        w = ev.count * clip_scales(ev, setting.clip)[ev.rec]
        row = np.searchsorted(self.view_rows, ev.cell // v)
        inview = (row < self.view_rows.size) & (
            self.view_rows[np.minimum(row, self.view_rows.size - 1)] == ev.cell // v)
        rec, cell = ev.rec[inview], row[inview] * v + ev.cell[inview] % v
        w = w[inview]
        per = np.bincount(rec, minlength=n * k)
        e_max = max(int(per.max()), 1)
        order = np.argsort(rec, kind="stable")
        rec, cell, w = rec[order], cell[order], w[order]
        slot = np.arange(rec.size) - np.repeat(np.cumsum(per) - per, per)
        self.c_cell = np.zeros((n, k, e_max), dtype=np.int64)
        self.c_val = np.zeros((n, k, e_max))
        self.c_cell.reshape(n * k, e_max)[rec, slot] = cell
        self.c_val.reshape(n * k, e_max)[rec, slot] = w
        self.n_cells = self.view_rows.size * v
        self._targets_disjoint = self._check_disjoint()

    def _to_view(self, cell: np.ndarray, w: np.ndarray) -> np.ndarray:
        v = self.spec.vocab
        rows = cell // v
        pos = np.searchsorted(self.view_rows, rows)
        ok = (pos < self.view_rows.size) & (
            self.view_rows[np.minimum(pos, self.view_rows.size - 1)] == rows)
        return np.bincount(pos[ok] * v + cell[ok] % v, weights=w[ok],
                           minlength=self.view_rows.size * v).astype(float)

    def _check_disjoint(self) -> bool:
        """True if no view cell can receive counts from two different targets."""
        n = self.setting.n_targets
        owner = np.full(self.view_rows.size * self.spec.vocab, -1)
        for i in range(n):  # n <= 1000 targets; vectorised over candidates and events
            cells = np.unique(self.c_cell[i][self.c_val[i] != 0])
            if np.any((owner[cells] != -1) & (owner[cells] != i)):
                return False
            owner[cells] = i
        return True

    def release(self, secrets: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Released view tables for a batch of secret assignments (R, n) -> (R, n_view, V)."""
        s = np.asarray(secrets, dtype=np.int64)
        r, n = s.shape
        ti = np.arange(n)[None, :]
        cells = self.c_cell[ti, s]  # (R, n, e)
        vals = self.c_val[ti, s]
        flat = (np.arange(r)[:, None, None] * self.n_cells + cells).ravel()
        tab = np.bincount(flat, weights=vals.ravel(), minlength=r * self.n_cells)
        tab = tab.reshape(r, self.n_cells) + self.base[None, :]
        sd = self.setting.noise_std
        if sd > 0:
            tab = tab + rng.normal(0.0, sd, tab.shape)
        return tab.reshape(r, self.view_rows.size, self.spec.vocab)

    def model(self, table: np.ndarray) -> NgramModel:
        """The released model of one run (view rows only) -- for inspection and examples."""
        return NgramModel(self.spec, self.view_rows, table, self.setting.smoothing)

    def scores(self, tables: np.ndarray) -> np.ndarray:
        """Attack scores (R, n, K): higher = more likely the secret."""
        st = self.setting
        logprior = np.log(np.clip(self.prior.probs, 1e-300, None))
        if st.attack == "posterior":
            if not self._targets_disjoint:
                raise ValueError("attack 'posterior' needs targets with disjoint context rows")
            y = tables.reshape(tables.shape[0], -1) - self.base[None, :]
            dot = (y[:, self.c_cell] * self.c_val[None]).sum(-1)  # (R, n, K)
            data = dot - 0.5 * (self.c_val ** 2).sum(-1)[None]
            sd = st.noise_std
            return (data / sd ** 2 if sd > 0 else data * 1e12) + logprior[None, None, :]
        t = np.maximum(tables, 0.0) + st.smoothing
        logp = np.log(t / t.sum(-1, keepdims=True))  # (R, n_view, V)
        sc = logp[:, self.ctx_view, self.cand_codes[None, :, :]].sum(-1)  # (R, n, K)
        return sc + logprior[None, None, :] if st.attack == "model+prior" else sc

    def simulate(self, rng: np.random.Generator, runs: int | None = None,
                 chunk_cells: int = 20_000_000) -> ExtractionResult:
        """Play ``runs`` independent games (fresh secrets and noise each) in batches."""
        st = self.setting
        runs = st.runs if runs is None else check_count("runs", runs, minimum=1)
        n, k = st.n_targets, self.prior.size
        per_run = max(self.n_cells, n * k * max(self.m, self.c_cell.shape[2]))
        batch = max(1, min(runs, chunk_cells // max(per_run, 1)))
        order = np.argsort(-self.prior.probs, kind="stable")
        prior_top = order[:st.guesses]
        succ, psucc, gp = [], [], []
        done = 0
        while done < runs:
            b = min(batch, runs - done)
            secrets = rng.choice(k, size=(b, n), p=self.prior.probs)
            sc = self.scores(self.release(secrets, rng))
            top = np.argsort(-sc, axis=-1, kind="stable")[..., :st.guesses]  # (b, n, g)
            hit = (top == secrets[..., None]).any(-1)
            succ.append(hit.sum(1))
            psucc.append(np.isin(secrets, prior_top).sum(1))
            gp.append(self.prior.probs[top].sum(-1))
            done += b
        return ExtractionResult(st, self.prior.name, self.prior.top_k_mass(st.guesses),
                                np.concatenate(succ), np.concatenate(psucc),
                                np.concatenate(gp), k_candidates=k,
                                uniform_prior=bool(np.ptp(self.prior.probs) < 1e-12))


def run_extraction(corpus: Sequence[str], prior: SecretPrior, setting: ExtractionSetting,
                   rng: np.random.Generator) -> ExtractionResult:
    """Build the game and simulate ``setting.runs`` independent runs."""
    return ExtractionGame(corpus, prior, setting).simulate(rng)
