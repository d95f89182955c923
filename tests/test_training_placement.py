"""The gradient canaries' placement on a sample (``coordinate_activity(examples=...)``,
``GradientCanaries.for_model(activity_examples=...)``): the silent set of the full
measurement, found for a fraction of its cost; deterministic under a seed."""

from __future__ import annotations

import numpy as np
import pytest

from needs import need

pytestmark = [pytest.mark.slow, pytest.mark.torch]


@pytest.fixture(autouse=True, scope="module")
def _frameworks() -> None:
    """torch and Opacus, imported when a test of this module runs (module globals)."""
    global torch
    torch = need("torch")
    need("opacus")
    need("sklearn")
    torch.set_num_threads(1)


def _digits_mlp(hidden: int = 32):  # type: ignore[no-untyped-def]
    from dpaudit.training import load_digits_data, make_model

    d = load_digits_data(0)
    return make_model("mlp", hidden=hidden), d.x_train, d.y_train


def test_sampled_placement_finds_the_full_silent_set_on_digits() -> None:
    from dpaudit.training import coordinate_activity
    from dpaudit.training.canaries import ACTIVITY_EXAMPLES, CHECK_FACTOR

    model, x, y = _digits_mlp()
    n = x.shape[0]
    assert 4 * n > ACTIVITY_EXAMPLES and n <= CHECK_FACTOR * ACTIVITY_EXAMPLES  # sampled
    full = coordinate_activity(model, x, y, 1.0, examples=None)
    sampled = coordinate_activity(model, x, y, 1.0)
    # W1[h, j] = flat coordinate 64 h + j; pixels 0, 32 and 39 are 0 in every image
    lit = (x > 0).sum(dim=0).numpy()
    assert (lit[[0, 32, 39]] == 0).all()
    dark = [64 * h + j for h in range(32) for j in (0, 32, 39)]
    assert (sampled[dark] == 0).all()
    # the same silent set as the four probes on all 1,347 examples: the per-example sample
    # (512 gradients) alone misses the pixels lit in 1-6 images; the silence check finds them
    np.testing.assert_array_equal(sampled == 0, full == 0)
    assert (full == 0).sum() > 3 * 32
    # and every coordinate the sample measured keeps an activity within a factor of the
    # full one's order: the 1,000 least active of either are mostly the same
    lo_s, lo_f = np.argsort(sampled, kind="stable")[:1000], np.argsort(full, kind="stable")[:1000]
    assert np.intersect1d(lo_s, lo_f).size > 800


def test_the_silence_check_on_the_kept_probes_is_the_one_on_probes_drawn_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # small models keep the probes' copies for the silence check; larger ones draw them
    # again from their generator states: the same activity, bit for bit
    from dpaudit.training import canaries as module
    from dpaudit.training import coordinate_activity

    model, x, y = _digits_mlp(hidden=16)
    kept = coordinate_activity(model, x, y, 1.0, examples=64, seed=3)
    # too large to keep: drawn again (the chunks stay whole: 16 examples a probe either way)
    monkeypatch.setattr(module, "_CHUNK_FLOATS", 16)
    again = coordinate_activity(model, x, y, 1.0, examples=64, seed=3)
    seen = kept[kept > 0]
    # the check ran and found coordinates the 64 sampled gradients missed (ranked below
    # every measured activity, _rank_missed)
    assert (kept == 0).any() and (seen < 1e-5 * np.median(seen)).sum() > 10
    np.testing.assert_array_equal(kept, again)


def test_a_sample_beyond_the_check_can_miss_only_rarely_moved_coordinates() -> None:
    from dpaudit.training import coordinate_activity

    model, x, y = _digits_mlp()
    full = coordinate_activity(model, x, y, 1.0, examples=None)
    small = coordinate_activity(model, x, y, 1.0, examples=16)  # check on 128 of 1,347
    assert ((full == 0) <= (small == 0)).all()          # silent stays silent
    missed = np.flatnonzero((small == 0) & (full > 0))
    # a coordinate taken for silent is one that few examples move: its full activity is
    # a hundredth of the median moved coordinate's, or less
    assert missed.size > 0
    assert full[missed].max() < 1e-2 * np.median(full[full > 0])


def test_sampled_placement_reads_the_reserved_branch() -> None:
    from dpaudit.training import GradientCanaries, coordinate_activity, load_data, make_model

    d = load_data("digits", seed=0, reserved=16)
    model = make_model("mlp", hidden=32, in_features=64, reserved=16)
    sizes = [p.numel() for p in model.parameters()]
    branch = np.arange(sum(sizes[:4]), sum(sizes))   # main: W1, b1, W2, b2; then the branch
    sampled = coordinate_activity(model, d.x_train, d.y_train, 1.0)
    full = coordinate_activity(model, d.x_train, d.y_train, 1.0, examples=None)
    assert (sampled[branch] == 0).all()
    np.testing.assert_array_equal(sampled == 0, full == 0)
    c = GradientCanaries.for_model(model, d.x_train, d.y_train, 60, sampling_rate=0.05,
                                   max_grad_norm=1.0)
    assert np.isin(c.plan.read_coords[:, 0], np.flatnonzero(full == 0)).all()


def test_placement_is_deterministic_under_a_seed_and_leaves_the_torch_generator() -> None:
    from dpaudit.training import GradientCanaries, coordinate_activity
    from own_model_cases import V, _Encoder

    torch.manual_seed(0)
    model = _Encoder()                           # dropout 0.1 in the probes (train mode)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randint(0, V, (600, 6), generator=g), torch.randint(0, 2, (600,), generator=g)
    state = torch.get_rng_state()
    a = coordinate_activity(model, x, y, 1.0, seed=3)
    assert torch.equal(torch.get_rng_state(), state)
    torch.manual_seed(12345)                     # another caller state: the same activity
    np.testing.assert_array_equal(coordinate_activity(model, x, y, 1.0, seed=3), a)
    assert not np.array_equal(coordinate_activity(model, x, y, 1.0, seed=4), a)
    p1 = GradientCanaries.for_model(model, x, y, 100, sampling_rate=0.05, max_grad_norm=1.0,
                                    seed=7).plan
    p2 = GradientCanaries.for_model(model, x, y, 100, sampling_rate=0.05, max_grad_norm=1.0,
                                    seed=7).plan
    np.testing.assert_array_equal(p1.read_coords, p2.read_coords)
    np.testing.assert_array_equal(p1.bits, p2.bits)


def test_bad_sample_sizes_are_refused() -> None:
    from dpaudit.training import GradientCanaries, coordinate_activity

    model, x, y = _digits_mlp(hidden=4)
    with pytest.raises(ValueError, match="examples"):
        coordinate_activity(model, x, y, 1.0, examples=0)
    with pytest.raises(ValueError, match="examples"):
        GradientCanaries.for_model(model, x, y, 10, sampling_rate=0.05, max_grad_norm=1.0,
                                   activity_examples=-1)
