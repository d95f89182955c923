"""Audit JAX training in one run: jax_privacy DP-SGD and BandMF / DP-FTRL, white box, last
iterate, black box.

With :mod:`dpaudit.training` (PyTorch), the only place of dpaudit that imports jax; it needs the
extra ``pip install 'dpaudit[jax]'`` (jax, jaxlib, jax-privacy) and says so when missing.  The
canaries, their readings and scores are the framework-neutral core :mod:`dpaudit.canaries`
(the correlated-noise score: :mod:`dpaudit.canaries.correlated`).

Public API:

* model:    :func:`load_digits_arrays`, :func:`init_mlp`, :func:`example_losses`,
  :func:`reserved_coordinates` (the digits MLP with reserved inputs);
* plan:     :data:`MECHANISMS`, :func:`strategy_for`, :func:`make_plan`,
  :func:`event_epsilon` (jax_privacy execution plans and their claim);
* flaws:    :data:`FLAWS`;
* training: :class:`JaxTrainingConfig`, :class:`JaxTrainingRun`,
  :func:`train_jax_with_canaries`, :func:`partition_groups` (a BandMF sampler's groups);
* audit:    :func:`audit_scores` (bits + scores of one run, e.g. from a user's own
  ``jax.grad`` / ``vmap`` loop -> every one-run method and the verdict),
  :func:`train_audit_jax`, :func:`jax_train_audit_dict` (``JaxTrainAudit``: an alias of
  :class:`dpaudit.outcome.Audit`, which they return).

See docs/training_jax.md.
"""

import importlib.util

from dpaudit.training._deps import MissingExtraError

JAX_EXTRA_HINT = "pip install 'dpaudit[jax]'"


def require_jax() -> None:
    """Raise :class:`MissingExtraError` naming the extra unless jax, jax_privacy, sklearn
    import."""
    missing = [m for m in ("jax", "jax_privacy", "sklearn")
               if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtraError(
            f"dpaudit.training.jax needs jax, jax-privacy and scikit-learn "
            f"({', '.join(missing)} not installed): {JAX_EXTRA_HINT}")


require_jax()

from dpaudit.training.jax.audit import (  # noqa: E402
    FAMILY,
    JaxTrainAudit,
    audit_scores,
    jax_train_audit_dict,
    run_cli_audit,
    summary_lines,
    train_audit_jax,
)
from dpaudit.training.jax.flaws import FLAWS  # noqa: E402
from dpaudit.training.jax.model import (  # noqa: E402
    example_losses,
    init_mlp,
    load_digits_arrays,
    reserved_coordinates,
)
from dpaudit.training.jax.plan import (  # noqa: E402
    MECHANISMS,
    event_epsilon,
    make_plan,
    strategy_for,
)
from dpaudit.training.jax.trainer import (  # noqa: E402
    JaxTrainingConfig,
    JaxTrainingRun,
    partition_groups,
    train_jax_with_canaries,
)

__all__ = [
    "JAX_EXTRA_HINT", "require_jax", "MissingExtraError",
    "load_digits_arrays", "init_mlp", "example_losses", "reserved_coordinates",
    "MECHANISMS", "strategy_for", "make_plan", "event_epsilon", "FLAWS",
    "JaxTrainingConfig", "JaxTrainingRun", "train_jax_with_canaries", "partition_groups",
    "FAMILY", "JaxTrainAudit", "audit_scores", "train_audit_jax", "jax_train_audit_dict",
    "run_cli_audit", "summary_lines",
]
