"""Runners that reproduce the papers' experiments (CSV + PNG).

Each runner module registers itself with :func:`dpaudit.papers.experiments.registry.experiment`;
``dpaudit reproduce NAME --out DIR [--full] [--seed S]`` looks it up by name.
"""

from dpaudit.papers.experiments.registry import EXPERIMENTS, Experiment, experiment, get_experiment

__all__ = ["EXPERIMENTS", "Experiment", "experiment", "get_experiment"]
