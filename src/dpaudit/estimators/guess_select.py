"""Counts of Steinke et al.'s guessing rule by selection instead of a full sort.

The top-k+ / bottom-k- rule (Steinke, Nasr & Jagielski 2023, §5; spec/001 §2.2) needs, for a
handful of ranks k, the prefix count

    c(k) = number of 1-bits among the k lowest scores,

where "lowest" is the order by (score ascending, then a uniformly random priority, then input
position): ``prio = gen.random(m)`` is drawn once for the whole array (the priority of canary i
is the i-th draw), exactly as the sort-based reference
:func:`dpaudit.estimators.steinke.ascending_order` does.  Correct guesses are then
``(c(m) - c(m - k+)) + (k- - c(k-))``.

Only the k-th order statistics are needed, so this module selects instead of sorting
(O(m) instead of O(m log m), and no m-sized int64 permutation):

1. ``np.partition`` of the scores at the needed ranks gives the boundary values v_k
   (the k-th smallest score);
2. one chunked pass over (score, bit) counts, for every distinct boundary value v, the
   entries strictly below v and equal to v, and the 1-bits among each (a ``searchsorted``
   into the sorted boundary values plus a ``bincount``);
3. for rank k with L entries below v_k and E equal to it, ``need = k - L`` lies in [1, E]:
   c(k) = (1-bits below v_k) + (1-bits among the ``need`` tied entries of lowest priority).
   If ``need == E`` every tied entry is taken and no priority matters; otherwise a second
   chunked pass draws the priorities (the same m draws, in chunks) and keeps those of the
   tied entries only, and the ``need`` lowest are found by a bucket (radix) selection on the
   priority value, ties in priority broken by position (a stable sort), as in the reference's
   stable lexsort.

The generator always advances by exactly m ``random()`` draws, whether or not the priorities
are needed, so the state after the call equals the reference's.  Equivalence to the sort-based
reference on seeded inputs (ties, all-equal scores, -0.0 vs 0.0, k = 0, k = m, m = 1, 2) is
tested in ``tests/test_guess_selection.py``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["lowest_member_counts"]

#: entries per chunk of the counting and priority passes (bounds the temporaries: ~1.2 MB).
CHUNK = 1 << 16
#: at most this many distinct ranks use selection; more (a long k sweep) sort instead.
MAX_SELECT_RANKS = 512
#: tie groups up to this size are ordered by a stable argsort of their priorities; larger
#: ones by bucket selection (memory 9 bytes per tied entry either way).
SMALL_TIE_GROUP = 1 << 15
#: priority buckets of the selection in large tie groups.
PRIO_BUCKETS = 1 << 16


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

    # 1. boundary values v_k (non-decreasing in k) and their distinct values u
    v = np.partition(score, inner - 1)[inner - 1]
    u = np.unique(v)  # -0.0 and 0.0 compare equal, so they are one value (as in a sort)
    b = u.size

    # 2. one pass: class 2j+1 = "equal to u[j]", class 2j = "between u[j-1] and u[j]"
    #    (class 2b = above u[b-1]); bin = 2 * class + bit
    hist = np.zeros(4 * b + 2, dtype=np.int64)
    top = b - 1
    for a in range(0, m, CHUNK):
        s = score[a:a + CHUNK]
        j = np.searchsorted(u, s, side="left")
        eq = s == u[np.minimum(j, top)]
        key = j << 2
        key += eq.view(np.uint8) << 1
        key += member[a:a + CHUNK].view(np.uint8)
        hist += np.bincount(key, minlength=hist.size)
    n_cls = hist[0::2] + hist[1::2]
    ones_cls = hist[1::2]
    below = np.concatenate([[0], np.cumsum(n_cls)])  # below[c] = entries in classes < c
    ones_below = np.concatenate([[0], np.cumsum(ones_cls)])

    gi = np.searchsorted(u, v)  # group (index into u) of each rank
    cls = 2 * gi + 1
    n_lt, ones_lt = below[cls], ones_below[cls]
    n_eq, ones_eq = n_cls[cls], ones_cls[cls]
    need = inner - n_lt  # in [1, n_eq]
    c_inner = ones_lt + ones_eq  # every tied entry taken; corrected below where need < n_eq
    partial = need < n_eq

    # 3. ties cut by a rank: priorities of the tied entries (the generator advances m draws)
    if partial.any():
        groups = np.unique(gi[partial])
        prio, bits = _tied_priorities(member, score, u[groups], n_cls[2 * groups + 1], gen)
        starts = np.concatenate([[0], np.cumsum(n_cls[2 * groups + 1])])
        for g_pos, g in enumerate(groups):
            sel = np.flatnonzero(partial & (gi == g))
            lo, hi = starts[g_pos], starts[g_pos + 1]
            c_inner[sel] = ones_lt[sel] + _ones_among_lowest(prio[lo:hi], bits[lo:hi],
                                                              need[sel])
    else:
        _advance(gen, m)

    out = np.where(ks > 0, total, 0).astype(np.int64)
    pos = np.searchsorted(inner, ks)
    hit = (ks > 0) & (ks < m)
    out[hit] = c_inner[pos[hit]]
    return out


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
    top = nv - 1
    for a in range(0, m, CHUNK):
        p = gen.random(min(CHUNK, m - a))
        s = score[a:a + CHUNK]
        j = np.searchsorted(values, s, side="left")
        jc = np.minimum(j, top)
        hit = s == values[jc]
        if not hit.any():
            continue
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
    from dpaudit.estimators.steinke import ascending_order

    order = ascending_order(score, gen)
    c = np.cumsum(member[order], dtype=np.int64)
    del order
    return np.where(ks > 0, c[np.maximum(ks, 1) - 1], 0)
