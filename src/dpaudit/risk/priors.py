"""Adversary priors and best-guess prior success (Beyond Worst Case §3.3, §5.1; BWC notes §3.1,
§1.7).

A prior here is a distribution over a (possibly huge) discrete domain, described by its
probabilities sorted by rank (rank 1 = most likely).  Every prior offers

* ``prob_at_rank(rank)``       vectorised;
* ``top_k_mass(k)``            best-guess success of exact match with k guesses (the k heaviest
                               items), i.e. p* of Thm 3.5 for exact match (BWC notes §1.7);
* ``max()``, ``min()``, ``percentile(q)``, ``median()``  the prior of the most / least likely
                               canary and of the canary at quantile q of the prior values
                               (rank ceil((1 - q) N); the median is rank N/2, BWC notes §3.2);
* ``scaled_down(k)``           the k heaviest items renormalised (the paper's 10-digit version
                               for Fig. 3; for Zipf this is Zipf(s, k), BWC notes §3.3).

Priors: :class:`UniformPrior` (digits, strings), :class:`ZipfPrior` (passwords; exact
normaliser H_{N,s} = zeta(s) - zeta(s, N + 1) via the Hurwitz zeta), :class:`ExplicitPrior`
(any probability vector, e.g. from LM scores) and :func:`pii_like_prior` (a heavy-tailed
prior over a candidate set with the paper-implied maximum).

Decisions (BWC notes §8.7, §8.8): the password Zipf support is unspecified; the literal reading
s = 1.1, N = 10^9 gives p_max = 0.10723 and does NOT reproduce the paper's Adv(eps=1) = 0.24 and
eps_protect = 0.25, which need p_max ~ 0.184.  :func:`password_prior` offers both
("literal": Zipf(1.1, 10^9); "implied": Zipf(1.1, 700), p_max = 0.18550, Adv 0.2417,
eps_protect 0.2497).  The PII (GPT-2 perplexity) prior cannot be rebuilt without a pretrained
model; :func:`pii_like_prior` is a Zipf-profile stand-in over a candidate set whose maximum is the
paper-implied 0.0055 (Adv(eps=5) = 0.448 ~ paper 0.45, eps_protect = 2.358 ~ 2.37), and
:meth:`ExplicitPrior.from_perplexities` normalises real perplexities either way the spec allows.

Best-guess success per metric, for per-person priors given as rows of a 2-D pmf array:
:func:`exact_match_success` (k guesses), :func:`within_distance_success` (ordinal attribute,
|x - z| <= E), :func:`guess_success` (the success of specific guesses, for Cor 3.4),
:func:`best_guess_success` (dispatch), and :func:`heterogeneous_priors` / :func:`load_priors`
for per-person priors supplied by the user.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp, zeta

from dpaudit.risk.flipping import check_prior_array
from dpaudit.search import solve_monotone
from dpaudit.validation import check_choice, check_count, check_finite_array

__all__ = [
    "DiscretePrior",
    "UniformPrior",
    "ZipfPrior",
    "ExplicitPrior",
    "generalized_harmonic",
    "password_prior",
    "window_mass",
    "pii_like_prior",
    "exact_match_success",
    "within_distance_success",
    "guess_success",
    "best_guess_success",
    "heterogeneous_priors",
    "load_priors",
]


def _ranks(rank: ArrayLike, size: float) -> np.ndarray:
    r = np.asarray(rank, dtype=float)
    if np.isnan(r).any() or (r < 1).any() or (r > size).any() or (r != np.floor(r)).any():
        raise ValueError(f"rank must be an integer in [1, {size:g}], got {rank!r}")
    return r


class DiscretePrior:
    """Base class: a prior over ``size`` items, by rank (subclasses define the pmf)."""

    size: float
    name: str = "prior"

    def prob_at_rank(self, rank: ArrayLike) -> np.ndarray | float:  # pragma: no cover - abstract
        raise NotImplementedError

    def top_k_mass(self, k: ArrayLike) -> np.ndarray | float:  # pragma: no cover - abstract
        raise NotImplementedError

    def max(self) -> float:
        """Prior of the most likely item (the ReRo kappa, the p* of one exact guess)."""
        return float(self.prob_at_rank(1))

    def min(self) -> float:
        return float(self.prob_at_rank(self.size))

    def percentile(self, q: float) -> float:
        """Prior of the item at quantile q of the prior values (rank ceil((1 - q) N))."""
        q = float(q)
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"q must be in [0, 1], got {q!r}")
        rank = min(max(math.ceil((1.0 - q) * self.size), 1), int(self.size))
        return float(self.prob_at_rank(rank))

    def median(self) -> float:
        """Prior of the median-rank item, rank N/2 (BWC notes §3.2)."""
        return self.percentile(0.5)

    def scaled_down(self, k: int) -> ExplicitPrior:
        """The k heaviest items, renormalised (e.g. to a 10-digit domain; BWC notes §3.3)."""
        k = check_count("k", k, minimum=1)
        if k > self.size:
            raise ValueError(f"k must be <= the support size {self.size:g}, got {k}")
        probs = np.asarray(self.prob_at_rank(np.arange(1, k + 1)), dtype=float)
        return ExplicitPrior(probs / probs.sum(), name=f"{self.name} top-{k}")

    def summary(self) -> dict[str, float]:
        return {"size": float(self.size), "max": self.max(), "median": self.median(),
                "p10": self.percentile(0.1), "min": self.min()}


@dataclass(frozen=True, repr=True)
class UniformPrior(DiscretePrior):
    """Uniform over ``size`` items (e.g. 10^9 for a random 9-digit canary, prior 1e-9)."""

    size: float
    name: str = "uniform"

    def __post_init__(self) -> None:
        s = float(self.size)
        if not (s >= 1 and math.isfinite(s) and s == math.floor(s)):
            raise ValueError(f"size must be an integer >= 1, got {self.size!r}")

    @classmethod
    def digits(cls, d: int) -> UniformPrior:
        """Uniform over d-digit strings (10^d values)."""
        d = check_count("d", d, minimum=1)
        return cls(float(10 ** d), name=f"uniform {d}-digit")

    @classmethod
    def strings(cls, alphabet_size: int, length: int) -> UniformPrior:
        """Uniform over strings of ``length`` symbols from an alphabet of ``alphabet_size``."""
        a = check_count("alphabet_size", alphabet_size, minimum=1)
        n = check_count("length", length, minimum=1)
        return cls(float(a) ** n, name=f"uniform {a}^{n}")

    def prob_at_rank(self, rank: ArrayLike) -> np.ndarray | float:
        r = _ranks(rank, self.size)
        out = np.full(r.shape, 1.0 / self.size)
        return out if out.ndim else float(out)

    def top_k_mass(self, k: ArrayLike) -> np.ndarray | float:
        kk = np.asarray(k, dtype=float)
        if np.isnan(kk).any() or (kk < 0).any():
            raise ValueError(f"k must be >= 0, got {k!r}")
        out = np.minimum(kk, self.size) / self.size
        return out if out.ndim else float(out)


def generalized_harmonic(n: ArrayLike, s: float) -> np.ndarray | float:
    """H_{N,s} = sum_{k=1}^{N} k^-s, vectorised over N.

    s > 1: zeta(s) - zeta(s, N + 1) (Hurwitz zeta, exact; BWC notes §1.10.6).  s <= 1: direct
    summation up to 1000 terms, Euler-Maclaurin (three correction terms, relative error < 1e-12)
    beyond.
    """
    nn = np.asarray(n, dtype=float)
    s = float(s)
    if np.isnan(nn).any() or (nn < 1).any():
        raise ValueError(f"N must be >= 1, got {n!r}")
    if s > 1:
        out = zeta(s, 1.0) - zeta(s, nn + 1.0)
        # for small N the difference loses digits; sum directly there
        small = nn <= 1000
        if np.any(small):
            ks = np.arange(1, 1001, dtype=float)
            cs = np.cumsum(ks ** -s)
            out = np.where(small, cs[np.clip(nn, 1, 1000).astype(int) - 1], out)
        return out if out.ndim else float(out)
    m = 1000
    ks = np.arange(1, m + 1, dtype=float)
    cs = np.cumsum(ks ** -s)
    direct = cs[np.clip(nn, 1, m).astype(int) - 1]
    nbig = np.maximum(nn, m)
    integral = np.log(nbig / m) if s == 1 else (nbig ** (1 - s) - m ** (1 - s)) / (1 - s)
    em = (cs[m - 1] - m ** -s) + integral + 0.5 * (m ** -s + nbig ** -s) \
        + s / 12.0 * (m ** (-s - 1) - nbig ** (-s - 1)) \
        - s * (s + 1) * (s + 2) / 720.0 * (m ** (-s - 3) - nbig ** (-s - 3))
    out = np.where(nn <= m, direct, em)
    return out if out.ndim else float(out)


@dataclass(frozen=True)
class ZipfPrior(DiscretePrior):
    """Zipf's law over ``size`` items: p(rank k) = k^-s / H_{N,s} (Beyond Worst Case §5.1,
    passwords)."""

    s: float
    size: float
    name: str = "zipf"
    norm: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not (float(self.s) > 0 and math.isfinite(float(self.s))):
            raise ValueError(f"s must be a finite number > 0, got {self.s!r}")
        n = float(self.size)
        if not (n >= 1 and math.isfinite(n) and n == math.floor(n)):
            raise ValueError(f"size must be an integer >= 1, got {self.size!r}")
        object.__setattr__(self, "norm", float(generalized_harmonic(n, self.s)))

    def prob_at_rank(self, rank: ArrayLike) -> np.ndarray | float:
        r = _ranks(rank, self.size)
        out = r ** -float(self.s) / self.norm
        return out if out.ndim else float(out)

    def top_k_mass(self, k: ArrayLike) -> np.ndarray | float:
        kk = np.minimum(np.asarray(k, dtype=float), self.size)
        if np.isnan(kk).any() or (kk < 0).any():
            raise ValueError(f"k must be >= 0, got {k!r}")
        safe = np.maximum(kk, 1.0)
        out = np.where(kk < 1, 0.0, np.asarray(generalized_harmonic(safe, self.s)) / self.norm)
        return out if out.ndim else float(out)


@dataclass(frozen=True)
class ExplicitPrior(DiscretePrior):
    """A prior given by its probability vector (any order; stored sorted by rank)."""

    probs: np.ndarray
    name: str = "explicit"
    size: float = field(init=False)

    def __post_init__(self) -> None:
        p = check_finite_array("probs", self.probs)
        if (p < 0).any():
            raise ValueError("probs must be non-negative")
        total = p.sum()
        if total <= 0:
            raise ValueError("probs must have a positive sum")
        p = np.sort(p / total)[::-1]
        object.__setattr__(self, "probs", p)
        object.__setattr__(self, "size", float(p.size))

    @classmethod
    def from_log_scores(cls, log_scores: ArrayLike, name: str = "explicit") -> ExplicitPrior:
        """Softmax of log-likelihood scores (normalised over the candidate set)."""
        s = check_finite_array("log_scores", log_scores)
        return cls(np.exp(s - logsumexp(s)), name=name)

    @classmethod
    def from_perplexities(cls, perplexities: ArrayLike, *, n_tokens: ArrayLike | None = None,
                          normalization: str = "likelihood",
                          name: str = "pii") -> ExplicitPrior:
        """Prior over candidates from LM perplexities of the filled-in sequence (Beyond Worst Case
        §5.1).

        normalization (BWC notes §3.1, [AMBIG]): "likelihood" -> prior ∝ exp(-N_tok ln PPL), the
        sequence likelihood (recommended; needs ``n_tokens``, scalar or per candidate);
        "inverse_perplexity" -> prior ∝ 1 / PPL.
        """
        check_choice("normalization", normalization, ("likelihood", "inverse_perplexity"))
        ppl = check_finite_array("perplexities", perplexities)
        if (ppl <= 0).any():
            raise ValueError("perplexities must be > 0")
        if normalization == "inverse_perplexity":
            return cls(1.0 / ppl, name=name)
        if n_tokens is None:
            raise ValueError("n_tokens is required for normalization='likelihood'")
        nt = np.broadcast_to(np.asarray(n_tokens, dtype=float), ppl.shape)
        return cls.from_log_scores(-nt * np.log(ppl), name=name)

    def prob_at_rank(self, rank: ArrayLike) -> np.ndarray | float:
        r = _ranks(rank, self.size).astype(np.int64)
        out = self.probs[r - 1]
        return out if np.ndim(out) else float(out)

    def top_k_mass(self, k: ArrayLike) -> np.ndarray | float:
        kk = np.asarray(k, dtype=float)
        if np.isnan(kk).any() or (kk < 0).any():
            raise ValueError(f"k must be >= 0, got {k!r}")
        cs = np.concatenate([[0.0], np.cumsum(self.probs)])
        out = np.minimum(cs[np.minimum(np.floor(kk), self.size).astype(np.int64)], 1.0)
        return out if np.ndim(out) else float(out)


#: the password prior variants of :func:`password_prior` (s, N).
PASSWORD_VARIANTS = {"literal": (1.1, 1e9), "implied": (1.1, 700.0)}


def password_prior(variant: str = "literal", *, exponent: float | None = None,
                   support: float | None = None) -> ZipfPrior:
    """Numerical-password prior: Zipf with s = 1.1 over 9-digit passwords (Beyond Worst Case §5.1).

    "literal" (default, the paper's words): Zipf(1.1, 10^9) -- p_max 0.10723, min 1.35e-11,
    median 2.89e-11; it does NOT reproduce the paper's Adv 0.24 / eps_protect 0.25.
    "implied": Zipf(1.1, 700), p_max 0.18550, the support that reproduces them (BWC notes §6.4,
    §8.7) -- an alternative to ask for explicitly, never used silently.  ``exponent`` and
    ``support`` override s and N of the chosen variant.
    """
    check_choice("variant", variant, tuple(PASSWORD_VARIANTS))
    s, n = PASSWORD_VARIANTS[variant]
    if exponent is not None:
        s = float(exponent)
        if not (math.isfinite(s) and s > 0):
            raise ValueError(f"exponent must be a finite number > 0, got {exponent!r}")
    if support is not None:
        n = float(support)
        if not (math.isfinite(n) and n >= 2 and n == math.floor(n)):
            raise ValueError(f"support must be an integer >= 2, got {support!r}")
    label = variant if exponent is None and support is None else f"s={s:g}, N={n:g}"
    return ZipfPrior(s, n, name=f"password ({label})")


def pii_like_prior(num_candidates: int = 5000, p_max: float = 0.0055) -> ExplicitPrior:
    """A PII-like (names) prior: a Zipf-profile distribution over ``num_candidates`` candidate
    names whose most likely candidate has prior ``p_max`` (default: the paper-implied 0.0055,
    BWC notes §6.4).  The exponent s solves 1 / H_{N,s} = p_max (shared monotone solver).

    Stand-in for the GPT-2-perplexity prior of Beyond Worst Case §5.1 (no pretrained model is used);
    feed
    real perplexities to :meth:`ExplicitPrior.from_perplexities` instead when available.  The
    default 5000 candidates (s = 0.4608) also reproduce the paper's qualitative findings at
    eps = 5: the most likely name has Adv 0.448 (paper 0.45) while the median and 10th-percentile
    names stay below Adv 0.05 (0.022 and 0.017); with <= 2000 candidates the median exceeds it.
    """
    n = check_count("num_candidates", num_candidates, minimum=2)
    pm = float(p_max)
    if not (1.0 / n < pm < 1.0):
        raise ValueError(f"p_max must be in (1/num_candidates, 1) = ({1.0 / n:g}, 1), "
                         f"got {p_max!r}")
    # 1/H_{N,s} increases with s from 1/N (s = 0) towards 1.
    s = solve_monotone(lambda x: 1.0 / float(generalized_harmonic(n, x)), pm, 0.0, 8.0,
                       xtol=1e-13)
    ranks = np.arange(1, n + 1, dtype=float)
    return ExplicitPrior(ranks ** -s, name=f"pii-like (N={n}, s={s:.4f})")


# --------------------------------------------------------------------------------------------
# Best-guess prior success per metric, for per-person priors (rows of a pmf matrix)
# --------------------------------------------------------------------------------------------

def _pmf_rows(pmf: ArrayLike, name: str = "pmf") -> np.ndarray:
    arr = np.asarray(pmf, dtype=float)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be 1-D (one person) or 2-D (persons x values), got shape "
                         f"{np.shape(pmf)}")
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise ValueError(f"{name} must be finite and non-negative")
    s = arr.sum(axis=1, keepdims=True)
    if (s <= 0).any():
        raise ValueError(f"every row of {name} must have a positive sum")
    return arr / s


def _squeeze(out: np.ndarray, pmf: ArrayLike) -> np.ndarray | float:
    return float(out[0]) if np.ndim(pmf) == 1 else out


def exact_match_success(pmf: ArrayLike, guesses: int = 1) -> np.ndarray | float:
    """p*_i for exact match with k guesses: the mass of the k heaviest values of D_i
    (BWC notes §1.7).  ``pmf``: one distribution (1-D) or one row per person (2-D)."""
    p = _pmf_rows(pmf)
    k = check_count("guesses", guesses, minimum=1)
    k = min(k, p.shape[1])
    top = -np.partition(-p, k - 1, axis=1)[:, :k] if k < p.shape[1] else p
    return _squeeze(np.minimum(top.sum(axis=1), 1.0), pmf)


def within_distance_success(pmf: ArrayLike, distance: int) -> np.ndarray | float:
    """p*_i for L1-approximate match on an ordinal attribute, l_i = 1{|x_i - z_i| <= E}:
    max_c sum_{|x - c| <= E} D_i(x), a sliding window of width 2E + 1 (BWC notes §1.7; Beyond Worst
    Case
    §6 Fig. 7).  Values are indexed 0..V-1 in order; windows are truncated at the edges."""
    p = _pmf_rows(pmf)
    win = window_mass(p, check_count("distance", distance, minimum=0))
    return _squeeze(np.minimum(win.max(axis=1), 1.0), pmf)


def window_mass(probs: ArrayLike, tolerance: int) -> np.ndarray:
    """Mass of the window |x - c| <= E for every centre c (prefix sums, truncated at the edges):
    out[i, c] = sum_{|x - c| <= E} probs[i, x].  For E = 0 this is ``probs``; its row maxima are
    :func:`within_distance_success` and its argmax the best window centre (the guess)."""
    p = np.atleast_2d(np.asarray(probs, dtype=float))
    e = check_count("tolerance", tolerance, minimum=0)
    v = p.shape[1]
    cs = np.concatenate([np.zeros((p.shape[0], 1)), np.cumsum(p, axis=1)], axis=1)
    c = np.arange(v)
    return cs[:, np.minimum(c + e + 1, v)] - cs[:, np.maximum(c - e, 0)]


def guess_success(pmf: ArrayLike, guesses: ArrayLike, *, distance: int = 0) -> np.ndarray | float:
    """p_i(z) of specific guesses (for Thm 3.2 / Cor 3.4): the prior mass of the values within
    ``distance`` (L1, ordinal index) of any of person i's guesses.

    Args:
      pmf: (V,) or (n, V) per-person pmf over value indices 0..V-1.
      guesses: (n,) one guess per person, or (n, k) k guesses per person (value indices).
    """
    p = _pmf_rows(pmf)
    e = check_count("distance", distance, minimum=0)
    g = np.asarray(guesses)
    g = g.reshape(p.shape[0], -1) if g.ndim <= 1 else g
    if g.shape[0] != p.shape[0]:
        raise ValueError(f"guesses must have one row per person ({p.shape[0]}), got {g.shape}")
    if not np.issubdtype(g.dtype, np.integer) or (g < 0).any() or (g >= p.shape[1]).any():
        raise ValueError(f"guesses must be integer value indices in [0, {p.shape[1] - 1}]")
    vals = np.arange(p.shape[1])
    hit = (np.abs(vals[None, None, :] - g[:, :, None]) <= e).any(axis=1)
    return _squeeze(np.minimum((p * hit).sum(axis=1), 1.0), pmf)


def best_guess_success(prior: ArrayLike, metric: str = "exact", k: int = 1) -> np.ndarray | float:
    """Best-guess (a-priori Bayes-optimal) prior success p* per success metric.

    metric "exact": exact match with k guesses (top-k mass); "within": ordinal L1 match within
    distance k (window of 2k + 1).  ``prior`` is a :class:`DiscretePrior` (exact metric only) or
    a pmf array (1-D, or one row per person).
    """
    check_choice("metric", metric, ("exact", "within"))
    if isinstance(prior, DiscretePrior):
        if metric != "exact":
            raise ValueError("metric 'within' needs an ordinal pmf array, not a ranked prior")
        k = check_count("k", k, minimum=1)
        return float(prior.top_k_mass(k))
    if metric == "exact":
        return exact_match_success(prior, k)
    return within_distance_success(prior, k)


def heterogeneous_priors(values: ArrayLike, *, name: str = "priors") -> np.ndarray:
    """Per-person priors from a user's array, validated: 1-D, finite, each in [0, 1]."""
    return check_prior_array(values, name)


#: bytes whose absence makes every non-blank line of an ASCII file a single cell: CSV
#: separators, quotes, comments, and every ASCII whitespace except the line breaks \n, \r.
_SPECIAL = (b",", b";", b'"', b"#", b" ", b"\t", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e",
            b"\x1f")


def _one_number_per_line(data: bytes, column: int | str) -> int | None:
    """Whether :func:`load_priors` may hand the file to NumPy's C reader: the number of
    leading lines to skip (0, or through a header line), or None to use the general parser.

    With no separator, quote, comment mark, non-line-break whitespace or lone \\r in an
    ASCII file, the general parser's stripped non-blank lines are the file's lines and each is
    one cell; a first cell that is not a number is a header (skipped there too)."""
    if (isinstance(column, str) or column != 0 or not data.isascii()
            or any(c in data for c in _SPECIAL)):
        return None
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        return None  # lone \r line breaks: leave them to the general parser
    m = re.match(rb"\s*(\S+)", data)
    if m is None:
        return None
    try:
        float(m.group(1))
        return 0
    except ValueError:
        return data.count(b"\n", 0, m.end()) + 1  # through the header line


def _read_one_number_per_line(pth: Path, column: int | str) -> np.ndarray | None:
    """Fast path of :func:`load_priors` (1e7 lines in about 3 s and 100 MB instead of 20 s and
    2.5 GB): the same values as the general parser, or None whenever the file is not a plain
    one-number-per-line file (then the general parser decides, errors included).  NumPy's C
    reader converts as float() does (correctly rounded); the few forms only float() accepts
    (e.g. "1_0") make it raise, and the general parser takes over."""
    skip = _one_number_per_line(pth.read_bytes(), column)
    if skip is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an empty body warns; it falls back below
            vals = np.loadtxt(pth, dtype=float, ndmin=1, comments=None, skiprows=skip,
                              encoding="ascii")
    except ValueError:
        return None
    return vals if vals.ndim == 1 and vals.size else None


def load_priors(path: str | Path, *, column: int | str = 0) -> np.ndarray:
    """Per-person priors from a text/CSV file: one number per line, or a CSV column (by index
    or header name).  Blank lines and lines starting with '#' are ignored."""
    # size limit, BOM, binary files
    from dpaudit.io import check_readable_file, read_text, scan_binary

    pth = check_readable_file(path, "prior file")
    scan_binary(pth)  # a NUL byte: a binary file, refused before anything is parsed
    fast = _read_one_number_per_line(pth, column)
    if fast is not None:
        return heterogeneous_priors(fast, name="prior-file values")
    size = pth.stat().st_size
    if size > GENERAL_PARSER_MAX_BYTES:  # the general parser holds every cell as an object
        raise ValueError(f"prior file {pth.name} is {size:,} bytes: files with headers, "
                         f"comments, quotes or several columns are read up to "
                         f"{GENERAL_PARSER_MAX_BYTES:,} bytes; write one number per line "
                         f"(read up to the size limit)")
    return _parse_priors(read_text(pth, "prior file"), pth, column)


#: largest prior file the general (CSV, header, comments) parser reads
GENERAL_PARSER_MAX_BYTES = 64 << 20


def _parse_priors(text: str, pth: Path, column: int | str) -> np.ndarray:
    """The general parser of :func:`load_priors` (CSV columns, headers, comments, quotes)."""
    rows = [ln.strip() for ln in text.splitlines()
            if ln.strip() and not ln.strip().startswith("#")]
    if not rows:
        raise ValueError(f"prior file {str(pth)!r} contains no values")
    cells = [[c.strip().strip('"').strip() for c in r.replace(";", ",").split(",")]
             for r in rows]
    idx = column
    try:
        float(cells[0][0 if isinstance(column, str) else column])
        header = False
    except (ValueError, IndexError):
        header = True
    if header:
        names = cells[0]
        if isinstance(column, str):
            if column not in names:
                raise ValueError(f"column {column!r} not in prior file header {names}")
            idx = names.index(column)
        cells = cells[1:]
    elif isinstance(column, str):
        raise ValueError(f"prior file {str(pth)!r} has no header; give column as an index")
    try:
        vals = [float(r[int(idx)]) for r in cells]
    except (ValueError, IndexError):
        raise ValueError(f"prior file {str(pth)!r}: column {column!r} must hold numbers") from None
    return heterogeneous_priors(vals, name="prior-file values")
