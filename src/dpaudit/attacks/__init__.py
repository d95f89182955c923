"""Membership-inference attack scorers on precomputed model outputs (no training inside).

Scores follow the dpaudit convention (higher = more likely a member) and feed the estimators
directly, e.g. ``E.multi_run(member, lira_scores(stat, member)[r])``.

* :mod:`dpaudit.attacks.basic` -- LOSS (Yeom et al. 2018), logit margin, logit-scaled
  confidence phi (Carlini et al. 2022, Eq. 4), cross-entropy, true-class probability;
* :mod:`dpaudit.attacks.lira` -- LiRA online / offline / leave-one-out over a shadow layout
  (Carlini et al. 2022, §IV);
* :mod:`dpaudit.attacks.rmia` -- RMIA (Zarifzadeh et al. 2024, §3), online and offline.
"""

from dpaudit.attacks.basic import (
    cross_entropy,
    logit_margin,
    loss_score,
    scaled_logit,
    true_class_probability,
)
from dpaudit.attacks.lira import lira_offline, lira_online, lira_scores
from dpaudit.attacks.rmia import rmia_ratio, rmia_scores

__all__ = ["cross_entropy", "logit_margin", "loss_score", "scaled_logit",
           "true_class_probability", "lira_offline", "lira_online", "lira_scores",
           "rmia_ratio", "rmia_scores"]
