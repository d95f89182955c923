"""Results written by other membership-inference tools -> membership observations.

Only public, stable formats are read, and only the fields listed here; nothing is unpickled.

**privacy_meter** (privacytrustlab/ml_privacy_meter, the 2024 code base: ``audit.py``,
``get_audit_results``): each audited target model ``k`` is saved with ``np.savez`` as
``attack_result_{k}.npz`` (and the pooled ``attack_result_average.npz``) holding the keys
``fpr, tpr, auc, one_tenth_fpr, zero_fpr, scores, memberships``.  :func:`from_privacy_meter`
reads exactly two of them:

* ``scores``      -- the MIA score per audited sample (RMIA or LOSS; "a larger score
  indicates higher chance of being member", the dpaudit convention);
* ``memberships`` -- the 0/1 (boolean) membership of each sample in the target model.

``auc`` is read too when present, only to check that the file's scores reproduce it
(a mismatch means the arrays were edited or mis-paired: ValueError).  The membership matrix
``memberships.npy`` that privacy_meter writes next to the models is ``(models, samples)``,
which is dpaudit's ``(runs, examples)`` shadow layout: pass it with a score matrix to
:class:`dpaudit.adapters.ShadowLayout`.

**TensorFlow Privacy** (``tensorflow_privacy.privacy.privacy_tests.membership_inference_attack
.data_structures``): a ``SingleAttackResult`` carries ``membership_scores_train`` (scores of
the training-set samples: members) and ``membership_scores_test`` (test-set samples:
non-members); "for a perfect attacker, all training samples will have higher scores than
test samples".  :func:`from_tf_privacy` reads these two attributes from a
``SingleAttackResult``, or from ``AttackResults.single_attack_results[index]``; it needs neither
TensorFlow nor a pickle (pass the in-memory object).  The summary DataFrame of
``AttackResults.calculate_pd_dataframe()`` holds only aggregate metrics (AUC, advantage, PPV):
it cannot be audited and is rejected with that explanation.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.adapters.in_out import from_in_out
from dpaudit.observations import MembershipObservations
from dpaudit.validation import check_count

__all__ = ["from_privacy_meter", "from_tf_privacy"]

#: relative tolerance of the AUC cross-check of privacy_meter files.
AUC_TOLERANCE = 1e-6

#: privacy_meter's run_mia.py pools the target models' scores into attack_result_average.npz
POOLED_WARNING = (
    "{name}: privacy_meter's attack_result_average.npz pools the scores of several target "
    "models (scores and memberships of every target model, raveled): a sample appears once per "
    "model, as a member of some and a non-member of others, so its rows are not independent "
    "canaries of one training run -- audit one model's attack_result_<i>.npz (a one-run audit "
    "of that model) instead; see docs/adapters.md")


def _auroc(member: np.ndarray, score: np.ndarray) -> float:
    from dpaudit.stats.attack_metrics import auroc

    return auroc(member, score)


def from_privacy_meter(source: str | Path | dict[str, Any]) -> MembershipObservations:
    """Observations from a privacy_meter ``attack_result_*.npz`` (or a dict of its arrays).

    Reads ``scores`` and ``memberships`` (flattened, as privacy_meter's own ``ravel()``) and
    cross-checks ``auc`` when present.
    """
    if isinstance(source, dict):
        arrays, name = source, "privacy_meter result"
    else:
        from dpaudit.io import read_npz

        p = Path(source)
        arrays, names = read_npz(p, "privacy_meter result", ("scores", "memberships", "auc"))
        arrays = {**dict.fromkeys(names), **arrays}
        arrays = {k: v for k, v in arrays.items() if v is not None or k not in
                  ("scores", "memberships", "auc")}
        name = str(p)
        if p.name.startswith("attack_result_average"):
            warnings.warn(POOLED_WARNING.format(name=name), UserWarning, stacklevel=2)
    missing = [k for k in ("scores", "memberships") if k not in arrays]
    if missing:
        raise ValueError(f"{name}: missing {', '.join(missing)} (privacy_meter's "
                         f"attack_result_*.npz holds 'scores' and 'memberships'; found "
                         f"{', '.join(sorted(arrays)) or 'none'})")
    try:
        obs = MembershipObservations.from_arrays(np.ravel(arrays["memberships"]),
                                                 np.ravel(arrays["scores"]))
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None
    obs.require_both_classes()
    stored = None
    if "auc" in arrays:
        stored = float(np.ravel(arrays["auc"])[0])
        got = _auroc(obs.member, obs.score)
        if abs(got - stored) > AUC_TOLERANCE * max(1.0, abs(stored)) + 1e-9:
            raise ValueError(f"{name}: the stored auc {stored:.6f} does not match the AUROC of "
                             f"its scores and memberships ({got:.6f}); arrays mis-paired?")
    from dpaudit.io import score_direction_warning

    msg = score_direction_warning(obs.member, obs.score, name, stored_auc=stored)
    if msg is not None:
        warnings.warn(msg, UserWarning, stacklevel=2)
    return obs


def from_tf_privacy(result: Any, index: int | None = None) -> MembershipObservations:
    """Observations from a TensorFlow Privacy ``SingleAttackResult`` (or ``AttackResults`` with
    ``index``): members = ``membership_scores_train``, non-members =
    ``membership_scores_test``."""
    if hasattr(result, "columns") and not hasattr(result, "membership_scores_train"):
        raise ValueError("this is a summary table (AttackResults.calculate_pd_dataframe()): it "
                         "holds only aggregate metrics, not per-example scores; pass the "
                         "SingleAttackResult instead")
    if hasattr(result, "single_attack_results"):
        items = list(result.single_attack_results)
        if index is None:
            if len(items) != 1:
                raise ValueError(f"AttackResults holds {len(items)} attacks; choose one with "
                                 f"index (0..{len(items) - 1})")
            index = 0
        i = check_count("index", index)
        if i >= len(items):
            raise ValueError(f"index must be in [0, {len(items) - 1}], got {i}")
        result = items[i]
    s_in = getattr(result, "membership_scores_train", None)
    s_out = getattr(result, "membership_scores_test", None)
    if s_in is None or s_out is None:
        raise ValueError("result has no membership_scores_train / membership_scores_test "
                         "(not every TF Privacy attack type stores membership scores)")
    if np.size(s_in) == 0 or np.size(s_out) == 0:
        raise ValueError("membership_scores_train and membership_scores_test must be non-empty")
    if np.size(s_in) != np.size(s_out):
        warnings.warn(f"{np.size(s_in)} member and {np.size(s_out)} non-member scores: one-run "
                      f"audits assume balanced, i.i.d. membership; the multi-run audit does "
                      f"not", UserWarning, stacklevel=2)
    obs = from_in_out(np.ravel(s_in), np.ravel(s_out))
    from dpaudit.io import score_direction_warning

    msg = score_direction_warning(obs.member, obs.score, "TF Privacy result")
    if msg is not None:
        warnings.warn(msg, UserWarning, stacklevel=2)
    return obs
