"""Counts of Steinke et al.'s guessing rule by selection instead of a full sort.

The top-k+ / bottom-k- rule (Steinke, Nasr & Jagielski 2023, §5; TOR notes §2.2) needs, for a
handful of ranks k, the prefix count

    c(k) = number of 1-bits among the k lowest scores,

where "lowest" is the order by (score ascending, then a uniformly random priority, then input
position): ``prio = gen.random(m)`` is drawn once for the whole array (the priority of canary i
is the i-th draw), exactly as the sort-based reference
:func:`ascending_order` does.  Correct guesses are then
``(c(m) - c(m - k+)) + (k- - c(k-))``.

Only the k-th order statistics are needed, so this module selects instead of sorting
(O(m) instead of O(m log m), and no m-sized int64 permutation):

1. boundary values v_k (the k-th smallest score), with the entries and 1-bits strictly below
   v_k and equal to it, from one chunked counting pass (:func:`_class_pass`: every entry is
   classified against a few sorted values by a branch-free sum of comparisons, and a
   ``bincount`` of (class, bit) counts them):
   * m >= ``SAMPLE_MIN_SIZE``: Floyd-Rivest style (Floyd & Rivest, "Expected time bounds
     for selection", CACM 18(3), 1975), no copy of the scores.  A uniform sample
     with replacement of m / ``SAMPLE_STRIDE`` scores (positions drawn from a private
     generator with a fixed seed, ``SAMPLE_SEED``: never the caller's, and results do not
     depend on it) brackets each v_k between two sample values (its expected sample rank
     +- ``SAMPLE_Z`` binomial sd, whatever the order of the data); the pass counts against
     the bracket ends and keeps the entries strictly inside a bracket, among which v_k is
     selected exactly.  If a rank falls outside its bracket (probability ~1e-9 per rank) or
     the brackets hold far more entries than expected, fall back to:
   * ``np.partition`` of a copy of the scores at the needed ranks, then the same pass
     against the v_k themselves;
2. for rank k with L entries below v_k and E equal to it, ``need = k - L`` lies in [1, E]:
   c(k) = (1-bits below v_k) + (1-bits among the ``need`` tied entries of lowest priority).
   If ``need == E`` every tied entry is taken and no priority matters; otherwise a second
   chunked pass draws the priorities (the same m draws, in chunks) and keeps those of the
   tied entries only, and the ``need`` lowest are found by a stable sort (small groups) or a
   bucket selection on the priority value (large groups), ties in priority broken by position,
   as in the reference's stable lexsort.

The result is exact whichever branch runs: the branches differ in cost only.

The generator always advances by exactly m ``random()`` draws, whether or not the priorities
are needed, so the state after the call equals the reference's.  Equivalence to the sort-based
reference on seeded inputs (ties, all-equal scores, -0.0 vs 0.0, k = 0, k = m, m = 1, 2) is
tested in ``tests/test_guess_select.py``.
"""

from __future__ import annotations

import numpy as np

from dpaudit.randomness import random_tie_order, tie_break_rng

__all__ = ["lowest_member_counts", "ascending_order"]

#: entries per chunk of the counting and priority passes (bounds the temporaries: ~1.2 MB).
CHUNK = 1 << 16
#: at most this many distinct ranks use selection; more (a long k sweep) sort instead.
MAX_SELECT_RANKS = 512
#: tie groups up to this size are ordered by a stable argsort of their priorities; larger
#: ones by bucket selection (memory 9 bytes per tied entry either way).
SMALL_TIE_GROUP = 1 << 15
#: priority buckets of the selection in large tie groups.
PRIO_BUCKETS = 1 << 16
#: from this many entries on, order statistics come from a random sample and one pass
#: (no copy of the scores); below, from ``np.partition`` of a copy.
SAMPLE_MIN_SIZE = 1 << 17
#: the sample holds m // SAMPLE_STRIDE scores (drawn with replacement).
SAMPLE_STRIDE = 32
#: seed of the private generator of the sample positions (speed only: results are exact).
SAMPLE_SEED = 0x73656C
#: bracket half-width in binomial standard deviations of the sample rank.
SAMPLE_Z = 6.0
#: at most this many distinct ranks use the sampled brackets (2 class boundaries each).
MAX_SAMPLED_RANKS = 24
#: entries kept inside the brackets beyond which the sample is deemed unrepresentative
#: (MAX_KEPT_FLOOR + m / 4; a fair sample keeps ~ 2 SAMPLE_Z sqrt(SAMPLE_STRIDE m p (1 - p)) per
#: rank at k = p m: 0.7 M of 1e7 for the default grid of audit_one_run).
MAX_KEPT_FLOOR = 1 << 16


def lowest_member_counts(member: np.ndarray, score: np.ndarray, ks: np.ndarray,
                         gen: np.random.Generator) -> np.ndarray:
    """c(k) for every k in ``ks`` (any shape, integers in [0, m]): the number of True entries
    of ``member`` among the k lowest ``score`` values, equal scores ordered by the priorities
    ``gen.random(m)`` (then by position).  ``gen`` advances by exactly m draws.

    ``member`` is a bool array and ``score`` a float array of the same length m (validated by
    the caller; NaN is not allowed).  Module docstring: the method.
    """
    m = int(score.size)
    ks = np.asarray(ks, dtype=np.int64)
    total = int(np.count_nonzero(member))
    inner = np.unique(ks[(ks > 0) & (ks < m)])
    if inner.size == 0:
        _advance(gen, m)
        return np.where(ks > 0, total, 0).astype(np.int64)
    if inner.size > MAX_SELECT_RANKS:
        return _counts_by_sorting(member, score, ks, gen)

    st = None
    if m >= SAMPLE_MIN_SIZE and inner.size <= MAX_SAMPLED_RANKS:
        st = _rank_stats_sampled(member, score, inner)
    if st is None:
        st = _rank_stats_partition(member, score, inner)
    v, n_lt, ones_lt, n_eq, ones_eq = st
    need = inner - n_lt  # in [1, n_eq]
    c_inner = ones_lt + ones_eq  # every tied entry taken; corrected below where need < n_eq
    partial = need < n_eq

    # ties cut by a rank: priorities of the tied entries (the generator advances m draws)
    if partial.any():
        groups, gi = np.unique(v[partial], return_inverse=True)
        sizes = np.zeros(groups.size, dtype=np.int64)
        sizes[gi] = n_eq[partial]
        prio, bits = _tied_priorities(member, score, groups, sizes, gen)
        starts = np.concatenate([[0], np.cumsum(sizes)])
        idx = np.flatnonzero(partial)
        for g in range(groups.size):
            sel = idx[gi == g]
            lo, hi = starts[g], starts[g + 1]
            c_inner[sel] = ones_lt[sel] + _ones_among_lowest(prio[lo:hi], bits[lo:hi],
                                                              need[sel])
    else:
        _advance(gen, m)

    out = np.where(ks > 0, total, 0).astype(np.int64)
    pos = np.searchsorted(inner, ks)
    hit = (ks > 0) & (ks < m)
    out[hit] = c_inner[pos[hit]]
    return out


RankStats = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _classify(s: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Class of every entry of ``s`` against the sorted distinct values ``w``: 2j + 1 if
    s == w[j], 2j if w[j-1] < s < w[j] (class 0 below w[0], 2 w.size above the last).

    j = #{w < s} is a sum of comparisons for few values (vectorised, branch-free: ~5x faster
    than a binary search per entry), ``searchsorted`` for many."""
    top = w.size - 1
    if w.size <= 64:
        j: np.ndarray = np.zeros(s.size, dtype=np.uint8)
        gt = np.empty(s.size, dtype=bool)
        for x in w:
            np.greater(s, x, out=gt)
            j += gt
    else:
        j = np.searchsorted(w, s, side="left")
    cls = j.astype(np.intp)
    cls <<= 1
    cls += s == w[np.minimum(j, top)]
    return cls


def _class_pass(member: np.ndarray, score: np.ndarray, w: np.ndarray,
                keep: np.ndarray | None, max_kept: int = 0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """One chunked pass: entries and 1-bits per class of :func:`_classify`, and the values,
    bits and classes of the entries in the classes flagged by ``keep`` (input order).  None
    as soon as more than ``max_kept`` entries would be kept."""
    m = score.size
    n_kept = 0
    nc = 2 * w.size + 1
    hist = np.zeros(2 * nc, dtype=np.int64)
    kv: list[np.ndarray] = []
    kb: list[np.ndarray] = []
    kc: list[np.ndarray] = []
    for a in range(0, m, CHUNK):
        s = score[a:a + CHUNK]
        bit = member[a:a + CHUNK]
        cls = _classify(s, w)
        if keep is not None:
            sel = keep[cls]
            if sel.any():
                kv.append(s[sel])
                kb.append(bit[sel])
                kc.append(cls[sel].astype(np.int32))
                n_kept += kv[-1].size
                if n_kept > max_kept:
                    return None
        cls <<= 1
        cls += bit.view(np.uint8)
        hist += np.bincount(cls, minlength=hist.size)
    if kv:
        vals, bits, classes = np.concatenate(kv), np.concatenate(kb), np.concatenate(kc)
    else:
        vals, bits, classes = np.empty(0), np.empty(0, bool), np.empty(0, np.intp)
    return hist[0::2] + hist[1::2], hist[1::2], vals, bits, classes


def _resolve(inner: np.ndarray, w: np.ndarray, n_cls: np.ndarray, ones_cls: np.ndarray,
             vals: np.ndarray, bits: np.ndarray, classes: np.ndarray,
             kept: np.ndarray | None) -> RankStats | None:
    """Order statistics from class counts: for each rank k the value v_k (k-th smallest) and
    the entries / 1-bits below v_k and equal to it.  The class holding the k-th entry is
    found from the cumulative counts; an "equal to w[j]" class gives v_k = w[j], an interval
    class needs its kept values (None when it was not kept)."""
    below = np.concatenate([[0], np.cumsum(n_cls)])  # below[c] = entries in classes < c
    ones_below = np.concatenate([[0], np.cumsum(ones_cls)])
    c_star = np.searchsorted(below[1:], inner, side="left")
    v = np.empty(inner.size)
    n_lt, ones_lt = below[c_star].copy(), ones_below[c_star].copy()
    n_eq, ones_eq = n_cls[c_star].copy(), ones_cls[c_star].copy()
    for i, c in enumerate(c_star.tolist()):
        if c % 2:
            v[i] = w[c // 2]
            continue
        if kept is None or not kept[c]:
            return None
        inside = classes == c
        cv, cb = vals[inside], bits[inside]
        r = int(inner[i] - below[c])  # the r-th smallest inside the interval, 1 <= r <= size
        x = np.partition(cv, r - 1)[r - 1]
        lt, eq = cv < x, cv == x
        v[i] = x
        n_lt[i] += np.count_nonzero(lt)
        ones_lt[i] += np.count_nonzero(lt & cb)
        n_eq[i] = np.count_nonzero(eq)
        ones_eq[i] = np.count_nonzero(eq & cb)
    return v, n_lt, ones_lt, n_eq, ones_eq


def _rank_stats_partition(member: np.ndarray, score: np.ndarray,
                          inner: np.ndarray) -> RankStats:
    """Boundary values by ``np.partition`` of (a copy of) the scores, then one counting pass
    against them: exact for any input."""
    w = np.unique(np.partition(score, inner - 1)[inner - 1])  # -0.0 == 0.0: one value
    passed = _class_pass(member, score, w, None)
    assert passed is not None  # nothing is kept
    n_cls, ones_cls, vals, bits, classes = passed
    st = _resolve(inner, w, n_cls, ones_cls, vals, bits, classes, None)
    assert st is not None  # every v_k is one of w
    return st


def _rank_stats_sampled(member: np.ndarray, score: np.ndarray,
                        inner: np.ndarray) -> RankStats | None:
    """Floyd-Rivest style selection without copying the scores: a uniform sample (with
    replacement, fixed private seed) brackets each needed order statistic between two sample
    values (its expected sample rank +- ``SAMPLE_Z`` binomial standard deviations); one
    counting pass against the bracket ends keeps the entries strictly inside a bracket, and
    the exact order statistic is selected among those.  Returns None when some rank falls
    outside its bracket (for distinct scores, a binomial tail beyond ``SAMPLE_Z`` sd: ~1e-9
    per rank, whatever the order of the data) or the brackets keep too many entries: the
    caller then uses :func:`_rank_stats_partition`.  Exact either way."""
    m = score.size
    pick = np.random.default_rng(SAMPLE_SEED).integers(0, m, max(1, m // SAMPLE_STRIDE))
    sample = score[pick]
    del pick
    ns = sample.size
    p = inner / m
    half = SAMPLE_Z * np.sqrt(ns * p * (1 - p)) + 2
    q = p * ns  # expected (1-based) rank of v_k in the sample
    lo = np.floor(q - half).astype(np.int64) - 1  # 0-based sample ranks; < 0: no lower end
    hi = np.ceil(q + half).astype(np.int64) - 1  # >= ns: no upper end
    ends = np.unique(np.r_[lo[lo >= 0], hi[hi < ns]])
    if ends.size == 0:
        return None
    sample.partition(ends)  # our own copy: in place
    w = np.unique(sample[ends])
    lo_v = np.where(lo >= 0, sample[np.clip(lo, 0, ns - 1)], -np.inf)
    hi_v = np.where(hi < ns, sample[np.clip(hi, 0, ns - 1)], np.inf)
    del sample
    # interval class 2j = (w[j-1], w[j]) is kept when it lies inside some bracket
    nc = 2 * w.size + 1
    kept = np.zeros(nc, dtype=bool)
    jl = np.searchsorted(w, lo_v, side="left")  # lower end = w[jl], or jl = 0 when -inf
    jh = np.searchsorted(w, hi_v, side="left")  # upper end = w[jh], or jh = w.size when inf
    for a, b in zip(np.where(np.isinf(lo_v), 0, jl + 1).tolist(), jh.tolist(), strict=True):
        kept[2 * a:2 * b + 1:2] = True
    passed = _class_pass(member, score, w, kept, max_kept=MAX_KEPT_FLOOR + (m >> 2))
    if passed is None:  # far more entries inside the brackets than a fair sample implies
        return None
    n_cls, ones_cls, vals, bits, classes = passed
    return _resolve(inner, w, n_cls, ones_cls, vals, bits, classes, kept)


def _advance(gen: np.random.Generator, m: int) -> None:
    """Advance ``gen`` as ``gen.random(m)`` would, without holding m doubles."""
    for a in range(0, m, CHUNK << 4):
        gen.random(min(CHUNK << 4, m - a))


def _tied_priorities(member: np.ndarray, score: np.ndarray, values: np.ndarray,
                     sizes: np.ndarray, gen: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Priorities and bits of the entries whose score equals one of ``values`` (sorted,
    distinct; ``sizes`` = how many entries equal each), grouped by value and in input order
    within a group.  Draws ``gen.random(m)`` in chunks (entry i gets the i-th draw)."""
    m = score.size
    total = int(sizes.sum())
    prio = np.empty(total, dtype=np.float64)
    bits = np.empty(total, dtype=bool)
    fill = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)  # next slot per group
    nv = values.size
    for a in range(0, m, CHUNK):
        p = gen.random(min(CHUNK, m - a))
        s = score[a:a + CHUNK]
        cls = _classify(s, values)
        hit = (cls & 1).astype(bool)
        if not hit.any():
            continue
        jc = cls >> 1
        g = jc[hit]
        ph, bh = p[hit], member[a:a + CHUNK][hit]
        if nv == 1:
            k = g.size
            prio[fill[0]:fill[0] + k] = ph
            bits[fill[0]:fill[0] + k] = bh
            fill[0] += k
            continue
        order = np.argsort(g, kind="stable")  # group-major, input order within a group
        gs = g[order]
        cnt = np.bincount(g, minlength=nv)
        first = np.concatenate([[0], np.cumsum(cnt)[:-1]])
        dest = fill[gs] + (np.arange(gs.size) - first[gs])
        prio[dest] = ph[order]
        bits[dest] = bh[order]
        fill += cnt
    return prio, bits


def _ones_among_lowest(prio: np.ndarray, bits: np.ndarray, need: np.ndarray) -> np.ndarray:
    """For each r in ``need`` (1 <= r < prio.size): the number of True ``bits`` among the r
    entries of lowest priority, equal priorities in input order (a stable order)."""
    t = prio.size
    if t <= SMALL_TIE_GROUP:
        order = np.argsort(prio, kind="stable")
        c = np.cumsum(bits[order], dtype=np.int64)
        return c[need - 1]
    # bucket selection: bucket floor(prio * B) is non-decreasing in prio (prio in [0, 1))
    nb = PRIO_BUCKETS
    hist = np.zeros(2 * nb, dtype=np.int64)
    for a in range(0, t, CHUNK):
        bk = _bucket(prio[a:a + CHUNK], nb)
        hist += np.bincount((bk << 1) + bits[a:a + CHUNK].view(np.uint8), minlength=2 * nb)
    n_b = hist[0::2] + hist[1::2]
    cum = np.cumsum(n_b)
    cum_ones = np.cumsum(hist[1::2])
    target = np.searchsorted(cum, need, side="left")  # bucket holding the r-th lowest
    want = np.zeros(nb, dtype=bool)
    want[target] = True
    cand_p, cand_b, cand_k = [], [], []
    for a in range(0, t, CHUNK):
        bk = _bucket(prio[a:a + CHUNK], nb)
        w = want[bk]
        if w.any():
            cand_p.append(prio[a:a + CHUNK][w])
            cand_b.append(bits[a:a + CHUNK][w])
            cand_k.append(bk[w])
    cp, cb, ck = np.concatenate(cand_p), np.concatenate(cand_b), np.concatenate(cand_k)
    out = np.empty(need.size, dtype=np.int64)
    for i, (r, bkt) in enumerate(zip(need.tolist(), target.tolist(), strict=True)):
        n_before = int(cum[bkt - 1]) if bkt else 0
        ones_before = int(cum_ones[bkt - 1]) if bkt else 0
        inside = ck == bkt
        order = np.argsort(cp[inside], kind="stable")
        out[i] = ones_before + int(np.count_nonzero(cb[inside][order][:r - n_before]))
    return out


def _bucket(p: np.ndarray, nb: int) -> np.ndarray:
    return np.minimum((p * nb).astype(np.int64), nb - 1)


def _counts_by_sorting(member: np.ndarray, score: np.ndarray, ks: np.ndarray,
                       gen: np.random.Generator) -> np.ndarray:
    """c(k) by one tie-broken sort (the reference method; used for long k sweeps)."""
    order = ascending_order(score, gen)
    c = np.cumsum(member[order], dtype=np.int64)
    del order
    return np.where(ks > 0, c[np.maximum(ks, 1) - 1], 0)


def ascending_order(score: np.ndarray, rng: np.random.Generator | int) -> np.ndarray:
    """Indices that sort ``score`` ascending, equal scores in a uniformly random order.

    Same permutation as ``np.lexsort((gen.random(m), score))`` (a random priority per canary
    breaks ties), and the generator is advanced identically, but computed as one argsort of
    the scores plus a lexsort of the tied entries only: without ties it is a plain argsort
    (:func:`dpaudit.randomness.random_tie_order`).

    An integer ``rng`` is NOT used as ``default_rng(rng)``: the priorities come from the
    tagged stream ``SeedSequence(rng, spawn_key=(TIE_BREAK_KEY,))``.  A game seeded with the
    same integer (``default_rng(seed)`` drawing the secret bits first) would otherwise produce
    priorities equal to the uniforms that decided the bits, so the tie-break would depend on
    the truth (issue 15, ``simulate rr --seed 0``: every tied guess below r = n was wrong).
    A Generator is used as given; it must be independent of the truth bits.
    """
    return random_tie_order(score, tie_break_rng(rng))
