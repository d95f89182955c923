"""The JAX loop's flaws of the other loops (``dpaudit.training.jax.flaws``) do what they say.

One run per flaw at the tiny size of tests/test_training_jax.py (its ``FLAWED`` settings, so
the correct run's compiled step is that file's), against the correct run of the same seed:
same data, canaries, bits, batches and noise key, so the released canary readings differ
exactly by what the flaw changed.  A Dirac canary's clipped gradient is the unit vector on
its coordinate, so the noiseless reading of canary i at step t is 1 if it was sampled (bit 1)
and 0 otherwise.
"""

from __future__ import annotations

import numpy as np
import pytest

from needs import need

pytestmark = [pytest.mark.jax, pytest.mark.slow]

# sentinel 0: canaries on silent coordinates only (a sentinel sits on a busy tensor, where
# real gradients would enter the noiseless readings; the sentinels' own readings are tested
# in tests/test_canaries.py and by the study in docs/training.md)
SETTINGS = dict(noise_multiplier=3.0, sampling_rate=0.1, hidden=16, canaries=200, steps=40,
                seed=0, sentinel=0.0)


def test_flawed_releases_differ_from_the_correct_one_as_the_flaw_says() -> None:
    need("jax_privacy")
    from dpaudit.training.jax import JaxTrainingConfig, train_jax_with_canaries
    from dpaudit.training.jax.audit import run_claim_checks
    from dpaudit.training.jax.model import PIXELS

    def run(flaw: str | None, **kw: object):  # type: ignore[no-untyped-def]
        return train_jax_with_canaries(JaxTrainingConfig(flawed=flaw, **SETTINGS, **kw))

    ok = run(None)
    t = np.arange(ok.steps)
    absent = ~ok.member
    for flaw, every in (("skipped_noise", 2), ("zero_steps", 4)):
        r = run(flaw)
        quiet = t % every == every - 1
        # the other steps are the correct run's releases, bit for bit
        np.testing.assert_array_equal(r.transcript[~quiet], ok.transcript[~quiet])
        # a step without noise releases the clipped sum itself: 0 or 1 per canary, 0 for
        # the canaries left out
        bare = r.transcript[quiet]
        np.testing.assert_allclose(bare, np.round(bare), atol=1e-5)
        assert set(np.round(bare).ravel()) == {0.0, 1.0}
        assert not bare[:, absent].any()
        # and what was dropped is the claimed noise: std sigma = 3 (4,000 or 2,000 values)
        dropped = ok.transcript[quiet] - bare
        assert abs(dropped.std() / 3.0 - 1) < 0.1, dropped.std()
        failed = {c.name for c in run_claim_checks(r) if not c.ok}
        assert failed == ({"released_noise"} if flaw == "skipped_noise"
                          else {"released_noise", "noise_multiplier"}), failed
    # clipped to 10 C, noise for C: a sampled canary reads 10 instead of 1
    r = run("wrong_clip_noise")
    extra = r.transcript - ok.transcript
    np.testing.assert_allclose(extra, 9 * np.round(extra / 9), atol=1e-3)
    assert set(np.round(extra / 9).ravel()) == {0.0, 1.0}
    assert not np.round(extra[:, absent]).any()
    # with a canary branch the canaries are spread over silent coordinates of several
    # tensors (one of them a bias).  On a canary whose coordinates are all silent (every
    # canary, without sentinels), a clipping flaw moves the noiseless reading of a sampled
    # canary from 1 to what the flaw's clipping leaves of its planted vector v (units of C)
    # read along v / |v|: sum_t |v_t| / |v| when each tensor t is clipped on its own,
    # |v_w| / |v| + |v_b|^2 / |v| when the weights v_w are clipped and the biases v_b not.
    ok = run(None, canary_branch=True)
    plan, layout = ok.canary_plan, ok.layout
    tensor, offset = layout.split(plan.plant_coords)
    names = np.array(layout.names)[tensor]
    silent = np.char.startswith(names.astype(str), "cb_")  # no reserved rows with it
    assert not (offset[names == "w1"] // SETTINGS["hidden"] >= PIXELS).any()
    every = silent.all(axis=1)
    assert every.all()
    v = plan.plant_values
    norm = np.linalg.norm(v, axis=1)
    per_tensor = np.zeros((plan.n, len(layout.names)))
    np.add.at(per_tensor, (np.arange(plan.n)[:, None].repeat(v.shape[1], 1), tensor), v ** 2)
    bias = np.isin(names, ["b1", "b2", "cb_b0"])
    reading = {"per_tensor_clipping": np.sqrt(per_tensor).sum(axis=1) / norm,
               "unclipped_biases": (np.linalg.norm(np.where(bias, 0, v), axis=1)
                                    + (np.where(bias, v, 0) ** 2).sum(axis=1)) / norm}
    for flaw, want in reading.items():
        r = run(flaw, canary_branch=True)
        assert (r.member == ok.member).all()
        assert want[every].min() > 1.5, want[every].min()  # sqrt(3) C; hundreds of C
        sampled = (r.transcript - ok.transcript)[:, every] / (want[every] - 1)
        np.testing.assert_allclose(sampled, np.round(sampled), atol=1e-3)
        assert set(np.round(sampled).ravel()) == {0.0, 1.0}
        assert not np.round(sampled[:, ~ok.member[every]]).any()
