"""Both training paths return the one Audit (``to_audit()`` is the Audit itself), with
TrainingFacts, on a run that meets its claim and on one whose canaries leak far more
(scores shifted by 3 noise units)."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.outcome import Audit
from dpaudit.training.facts import TrainingFacts
from needs import need


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.jax
@pytest.mark.parametrize("shift,leaks", [(0.0, False), (3.0, True)])
def test_training_results_expose_the_audit(shift: float, leaks: bool) -> None:
    need("torch")
    need("jax")
    from dpaudit.training.audit import audit_training
    from dpaudit.training.jax.audit import audit_scores

    rng = np.random.default_rng(0)
    member = rng.random(1000) < 0.5
    score = member * shift + rng.normal(size=1000)
    kw = dict(noise_multiplier=1.0, sampling_rate=0.01, steps=100)
    for result, framework in ((audit_training(member, score, **kw), "own"),
                              (audit_scores(member, score, **kw), "jax")):
        audit = result.to_audit()
        assert isinstance(result, Audit) and audit is result
        # one facts class for every framework, naming it
        assert isinstance(result.facts, TrainingFacts) and result.framework == framework
        assert result.violation is audit.violation is leaks
        assert audit.to_dict()["violation"] is leaks
        assert audit.claim is not None and audit.claim.dpsgd is not None
