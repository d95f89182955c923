"""The audited JAX model: a one-hidden-layer MLP on scikit-learn's digits, with reserved inputs.

Data: scikit-learn's bundled digits (nothing downloaded), pixels scaled to [0, 1], the seeded
stratified split of :mod:`dpaudit.training` (same ``random_state`` and test fraction).

Reserved coordinates (where the white-box canaries live).  The model's input is the 64 pixels
followed by ``reserved`` input columns that are zero for every real example.  The first-layer
weights fed by a reserved column, ``w1[64 + r, :]``, receive exactly zero gradient from real
data (their input is zero) and do not change any real prediction, so a canary whose gradient
is a Dirac on one of them is read without real-data background (the "memoryless" Dirac canary
of "Privacy Audit as Bits Transmission" §6.4, after Nasr et al. 2023, with the canary's
coordinate reserved by construction instead of searched for).  A user reserves coordinates the
same way in their own model: an input column, embedding row or unit that real data never
activates.

Parameters are a dict of arrays ``{"w1", "b1", "w2", "b2"}`` (``"w1"`` is the first parameter
group, the rest the second; :mod:`.flaws` uses the grouping).

A canary branch (``init_mlp(..., branch=w)``, used with no reserved inputs; the JAX form of
:class:`dpaudit.training.CanaryBranch`): three more tensors, ``cb_w0`` (1 x w), ``cb_b0`` (w,
one-dimensional, a bias) and ``cb_w2`` (w x 1), added to the logits through a gate of 0::

    logits = mlp(x) + 0 * (relu(cb_w0[0] + cb_b0) @ cb_w2)

so the predictions are the MLP's bit for bit at every step and every per-example gradient of
the branch is exactly 0: silent coordinates in three tensors more (w1's reserved rows are in
one), where spread canaries read sqrt(3) C under per-tensor clipping and hundreds of C when
the biases are left unclipped (docs/training.md, "A canary branch for dense models").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.training.common import load_digits_split
from dpaudit.validation import check_count

__all__ = ["DigitsArrays", "load_digits_arrays", "init_mlp", "logits", "example_losses",
           "accuracy", "reserved_coordinates", "PIXELS", "losses_jit", "BRANCH", "ORDER",
           "silent_coordinates"]

PIXELS = 64
#: the canary branch's tensors (module docstring)
BRANCH = ("cb_w0", "cb_b0", "cb_w2")
#: the flat coordinate order of the parameters (the canaries' layout): w1 first, so a Dirac
#: canary's index into w1 is its flat coordinate
ORDER = ("w1", "b1", "w2", "b2") + BRANCH


@dataclass(frozen=True, eq=False)
class DigitsArrays:
    """Train/test split as NumPy arrays: x (N, 64) float32 in [0, 1], y (N,) int32."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int = 10


def load_digits_arrays(seed: int = 0, *, test_fraction: float = 0.25) -> DigitsArrays:
    """scikit-learn's digits, split train/test (stratified, seeded), pixels in [0, 1]
    (:func:`dpaudit.training.common.load_digits_split`)."""
    xtr, ytr, xte, yte = load_digits_split(seed, test_fraction=test_fraction)
    return DigitsArrays(xtr, ytr.astype(np.int32), xte, yte.astype(np.int32))


def init_mlp(rng: np.random.Generator, *, hidden: int, reserved: int, num_classes: int = 10,
             branch: int = 0) -> dict[str, np.ndarray]:
    """MLP (64 + reserved) -> hidden -> ReLU -> num_classes, initialised uniform in
    +-1/sqrt(fan_in) (PyTorch's Linear default) from a seeded NumPy generator (host arrays:
    no device computation to compile); ``branch`` > 0 adds a gated-off canary branch of that
    width (module docstring), drawn after the MLP's parameters (which stay the same)."""
    hidden = check_count("hidden", hidden, minimum=1)
    reserved = check_count("reserved", reserved)
    branch = check_count("branch", branch)
    d = PIXELS + reserved
    lim1, lim2 = 1.0 / math.sqrt(PIXELS), 1.0 / math.sqrt(hidden)

    def u(shape: tuple[int, ...], lim: float) -> np.ndarray:
        return rng.uniform(-lim, lim, size=shape).astype(np.float32)

    params = {"w1": u((d, hidden), lim1), "b1": u((hidden,), lim1),
              "w2": u((hidden, num_classes), lim2), "b2": u((num_classes,), lim2)}
    if branch:
        params.update(cb_w0=u((1, branch), 1.0), cb_b0=u((branch,), 1.0),
                      cb_w2=u((branch, 1), 1.0 / math.sqrt(branch)))
    return params


def logits(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    """Class scores for pixel inputs x (N, 64); the reserved inputs are zero (and the canary
    branch, if any, enters with a gate of 0)."""
    w1 = params["w1"]
    h = jax.nn.relu(x @ w1[:PIXELS] + params["b1"])
    z = h @ params["w2"] + params["b2"]
    if "cb_w0" in params:
        side = jax.nn.relu(params["cb_w0"][0] + params["cb_b0"]) @ params["cb_w2"]
        z = z + 0.0 * side
    return z


def silent_coordinates(params: dict[str, np.ndarray], reserved: int) -> np.ndarray:
    """(d,) booleans over the flat layout :data:`ORDER` of ``params``: True where real data
    never moves the coordinate, by construction -- w1's reserved rows (their input is 0) and
    the canary branch (its gate is 0)."""
    parts = []
    for k in ORDER:
        if k not in params:
            continue
        a = np.zeros(params[k].shape, dtype=bool)
        if k == "w1":
            a[PIXELS:PIXELS + reserved] = True
        elif k in BRANCH:
            a[...] = True
        parts.append(a.ravel())
    return np.concatenate(parts)


def example_losses(params: dict[str, jax.Array], x: jax.Array, y: jax.Array) -> jax.Array:
    """Per-example cross-entropy (N,)."""
    z = logits(params, x)
    return jax.nn.logsumexp(z, axis=-1) - jnp.take_along_axis(z, y[:, None], axis=-1)[:, 0]


@jax.jit
def _predict(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    return jnp.argmax(logits(params, x), axis=-1)


def accuracy(params: dict[str, jax.Array], x: np.ndarray, y: np.ndarray) -> float:
    """Test accuracy."""
    return float(np.mean(np.asarray(_predict(params, x)) == y))


losses_jit = jax.jit(example_losses)


def reserved_coordinates(n: int, *, hidden: int, rng: np.random.Generator
                         ) -> tuple[np.ndarray, int]:
    """n distinct flat indices into ``w1`` (shape (64 + R, hidden)) on reserved rows, in random
    order, and R = ceil(n / hidden), the number of reserved input columns they need."""
    n = check_count("canaries", n, minimum=1)
    hidden = check_count("hidden", hidden, minimum=1)
    reserved = math.ceil(n / hidden)
    flat = PIXELS * hidden + rng.permutation(reserved * hidden)[:n]
    return flat.astype(np.int64), reserved
