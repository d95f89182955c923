"""The ROC core (dpaudit.stats.roc) against brute-force definitions on tied scores."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.stats.roc import (
    auroc_from_counts,
    delong_from_counts,
    roc_counts,
    score_counts,
    tpr_at_fpr_from_counts,
)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_counts_roc_auroc_and_tpr_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    member = rng.random(300) < 0.4
    score = np.round(rng.normal(member * 0.8, 1.0), 1)  # many ties
    c = score_counts(member, score)
    assert c.c1.sum() == member.sum() and c.c0.sum() == (~member).sum()
    assert np.all(np.diff(c.value) > 0)
    x, y = score[member], score[~member]
    # AUROC = P[X > Y] + P[X = Y] / 2 over all pairs
    brute = ((x[:, None] > y[None, :]).mean() + 0.5 * (x[:, None] == y[None, :]).mean())
    assert auroc_from_counts(c) == pytest.approx(brute, rel=1e-12)
    assert delong_from_counts(c.c1, c.c0, 0.95)[0] == pytest.approx(brute, rel=1e-12)
    fp, tp = roc_counts(c)
    for t, f, k in zip(np.r_[np.inf, c.value[::-1]], fp, tp, strict=True):
        assert k == (x >= t).sum() and f == (y >= t).sum()
    for f in (0.0, 0.05, 0.2, 1.0):
        best = max((x >= t).mean() for t in np.r_[np.inf, c.value] if (y >= t).mean() <= f)
        assert tpr_at_fpr_from_counts(c, [f])[0][0] == pytest.approx(best, abs=0)
