"""Estimators: observations (+ family, delta, confidence) -> AuditResult.

One module per method: multi_run (Hypothesis Interpretation), tight (Tight One-Run), bits (Bits
Transmission), steinke
(Steinke-Nasr-Jagielski 2023), mahloujifar (Mahloujifar-Melis-Chaudhuri 2024), lifted (Pillutla et
al.);
one_run runs the one-run methods side by side on the same observations.  Every method is an
entry of the one registry, :data:`dpaudit.registry.ESTIMATORS` (name, what it reads, its
guarantee); ``bound(method, canaries=, guesses=, wrong=)`` is the one calling convention of the
count methods (:mod:`.dispatch`).
"""

from dpaudit.estimators.bits import bits
from dpaudit.estimators.dispatch import bound
from dpaudit.estimators.guessing import guesses_from_scores
from dpaudit.estimators.lifted import lifted, lifted_tuned
from dpaudit.estimators.mahloujifar import mahloujifar, mahloujifar_many
from dpaudit.estimators.multi_run import multi_run, multi_run_counts
from dpaudit.estimators.one_run import audit_one_run
from dpaudit.estimators.steinke import steinke, steinke_many
from dpaudit.estimators.tight import tight, tight_p_value

__all__ = ["audit_one_run", "bits", "bound", "guesses_from_scores", "lifted", "lifted_tuned",
           "mahloujifar", "mahloujifar_many", "multi_run", "multi_run_counts", "steinke",
           "steinke_many", "tight", "tight_p_value"]
