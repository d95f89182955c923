"""The simulated-mechanism abstraction shared by every simulator and flawed variant.

A :class:`SimulatedMechanism` is a complete one-run bits-transmission channel (Bits Transmission
Definition 5 / Algorithm 2, BT notes §2.1 and §2.3; Tight One-Run Def. 6, TOR notes §2.2) for an
*idealised* mechanism whose dataset generator H is fixed by construction (one-hot canaries, one
coordinate or output symbol per canary, so the arrangement is memoryless):

* ``run(bits, rng)`` -- the channel C_M: one run of M on the audit dataset X_A = H(bits),
  vectorised over canaries, returns the released output (the message m);
* ``score(output)`` -- the decoder D: one real score per canary computed from the output only
  (regulation R2).  Convention used everywhere in dpaudit: higher = more likely bit 1, and the
  MAP (Bayes-optimal, uniform prior) guess is ``score > 0``;
* ``curve`` -- the TRUE privacy guarantee of one bit flip (a :class:`dpaudit.curves.Curve`);
* ``claimed_curve`` -- what the implementation claims (equal to ``curve`` for a correct
  mechanism; different for the deliberately flawed variants in :mod:`dpaudit.mechanisms.flawed`).

``simulate(n, rng)`` draws n uniform secret bits (p = 1/2), runs the channel once and returns
:class:`dpaudit.observations.MembershipObservations` (truth bit, score) for the estimators.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpaudit.curves.base import Curve
from dpaudit.observations import MembershipObservations
from dpaudit.randomness import as_rng, draw_bits
from dpaudit.validation import check_binary_array, check_delta

__all__ = ["SimulatedMechanism", "as_rng", "draw_bits"]

#: finite stand-in for an infinite log-likelihood ratio (scores must be finite).
INFINITE_SCORE = 1e6


class SimulatedMechanism(ABC):
    """A vectorised, seeded one-run channel with a declared true (and claimed) privacy curve."""

    #: short identifier (CLI name).
    name: str = "mechanism"
    #: None for a correct implementation, otherwise the name of the flaw.
    flaw: str | None = None

    @property
    @abstractmethod
    def curve(self) -> Curve:
        """The true f-DP guarantee with respect to one canary bit."""

    @property
    def claimed_curve(self) -> Curve:
        """The guarantee the implementation claims (the true one unless flawed)."""
        return self.curve

    @property
    @abstractmethod
    def params(self) -> Mapping[str, Any]:
        """Parameters that define the mechanism (for reports)."""

    @abstractmethod
    def run(self, bits: np.ndarray, rng: np.random.Generator) -> Any:
        """One run of the channel on H(bits); returns the released output only."""

    @abstractmethod
    def score(self, output: Any) -> np.ndarray:
        """Decoder scores (higher = bit 1; ``score > 0`` is the MAP guess), from the output."""

    def claimed_epsilon(self, delta: float) -> float:
        return float(self.claimed_curve.epsilon(check_delta(delta)))

    def true_epsilon(self, delta: float) -> float:
        return float(self.curve.epsilon(check_delta(delta)))

    def simulate(self, n: int, rng: np.random.Generator | int) -> MembershipObservations:
        """One-run game (Bits Transmission Algorithm 2): n uniform bits, one run, decode all
        bits."""
        g = as_rng(rng)
        bits = draw_bits(n, g)
        return self.transmit(bits, g)

    def transmit(self, bits: Any, rng: np.random.Generator | int) -> MembershipObservations:
        """Send the given secret bits through one run and decode them (no abstention)."""
        b = check_binary_array("bits", bits)
        out = self.run(b, as_rng(rng))
        s = np.asarray(self.score(out), dtype=float)
        if s.shape != b.shape:  # pragma: no cover - internal invariant
            raise RuntimeError(f"decoder returned {s.shape} scores for {b.shape} bits")
        return MembershipObservations.from_arrays(b, s)

    def describe(self) -> str:
        inner = ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool)
                          else f"{k}={v}" for k, v in self.params.items())
        return f"{self.name}({inner})"

    def __repr__(self) -> str:
        return self.describe()


