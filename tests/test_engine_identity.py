"""A trial store belongs to one mechanism: its identity covers the code of the mechanism,
neighbours and score (and what they refer to), the arguments of partials and the attributes of
callable instances, and the library versions; a changed mechanism is refused, naming what
changed, never mixed with the old trials."""

from __future__ import annotations

import functools
import importlib
import json
import sys
import textwrap

import numpy as np
import pytest

import engine_audits as ea
from dpaudit.engine import execute
from dpaudit.engine.identity import describe_changes, fingerprint, game_identity, versions
from dpaudit.games.blackbox import BlackBoxAudit
from dpaudit.games.examples import CountNeighbours, GaussianCount, identity_score

LEAKY = '''
import numpy as np

SIGMA = 1.0

def helper(x):
    return x

def mech(dataset, rng):
    # the bug: the canary's presence leaks through a shift of 3 standard deviations
    leak = 3.0 if dataset and dataset[-1] == "canary" else 0.0
    return helper(float(len(dataset) + leak + SIGMA * rng.standard_normal()))

def neighbours(rng):
    d0 = list(range(10))
    return d0, d0 + ["canary"]

def score(out):
    return float(out)

from dpaudit.games.blackbox import BlackBoxAudit
AUDIT = BlackBoxAudit(mech, neighbours, score)
'''


def _module(tmp_path, name: str, text: str):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    sys.modules.pop(name, None)
    importlib.invalidate_caches()
    return importlib.import_module(name)


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # no stale .pyc after an edit
    return tmp_path


def test_fixed_mechanism_refused_on_resume_cli(user_dir, capsys) -> None:
    """The reported scenario: a leaking mechanism audited into a store, fixed, resumed."""
    from dpaudit.cli import main

    _module(user_dir, "mymech", LEAKY)
    store = str(user_dir / "s.sqlite")
    args = ["run", "mymech:AUDIT", "--trials", "400", "--executor", "inline", "--store", store,
            "--claimed-epsilon", "1", "--json"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["violation"] is True  # the leak is found
    sys.modules.pop("mymech", None)
    (user_dir / "mymech.py").write_text(LEAKY.replace("3.0 if", "0.0 if"))  # the fix
    assert main([*args, "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1
    assert "the mechanism's code changed (mymech.mech)" in err
    assert "refusing to mix trials" in err
    # the store still holds only the 400 trials of the first version
    from dpaudit.engine import TrialStore

    with TrialStore(store, readonly=True) as st:
        assert st.info().trials == 400 and st.info().runs == 1


def test_what_the_fingerprint_sees(user_dir) -> None:
    m1 = _module(user_dir, "fp_a", LEAKY)
    base = fingerprint(m1.mech)
    # same source in a fresh import: same fingerprint (no memory addresses)
    assert fingerprint(_module(user_dir, "fp_a", LEAKY).mech) == base
    # a helper it calls, edited: the code digest changes
    m2 = _module(user_dir, "fp_a", LEAKY.replace("return x", "return x + 0.0"))
    assert fingerprint(m2.mech).code != base.code
    # a module-level value it reads: the state digest changes, the code does not
    m3 = _module(user_dir, "fp_a", LEAKY.replace("SIGMA = 1.0", "SIGMA = 2.0"))
    assert fingerprint(m3.mech).code == base.code and fingerprint(m3.mech).state != base.state
    # a comment-only edit counts as a code change (conservative: source text)
    m4 = _module(user_dir, "fp_a", LEAKY.replace("# the bug", "# the defect"))
    assert fingerprint(m4.mech).code != base.code


def _scaled(x: float, dataset, rng, *, shift: float = 0.0) -> float:
    return float(len(dataset) * x + shift + rng.standard_normal())


def test_partials_instances_closures() -> None:
    p1, p2 = functools.partial(_scaled, 1.0), functools.partial(_scaled, 2.0)
    assert fingerprint(p1) == fingerprint(functools.partial(_scaled, 1.0))
    assert fingerprint(p1).code == fingerprint(p2).code
    assert fingerprint(p1).state != fingerprint(p2).state
    assert fingerprint(functools.partial(_scaled, 1.0, shift=1.0)).state != fingerprint(p1).state
    # callable instances: attributes
    assert fingerprint(GaussianCount(1.0)) == fingerprint(GaussianCount(1.0))
    assert fingerprint(GaussianCount(1.0)).state != fingerprint(GaussianCount(0.5)).state

    class Plain:
        def __init__(self, k):
            self.k = k

        def __call__(self, d, rng):
            return self.k

    assert fingerprint(Plain(1)).state != fingerprint(Plain(2)).state

    # closure cells and arrays
    def make(scale):
        w = np.full(3, scale)

        def mech(d, rng):
            return float(w.sum())
        return mech

    assert fingerprint(make(1.0)) == fingerprint(make(1.0))
    assert fingerprint(make(1.0)).state != fingerprint(make(1.5)).state


def test_store_refusal_names_the_change(tmp_path) -> None:
    path = tmp_path / "p.sqlite"
    a1 = BlackBoxAudit(functools.partial(_scaled, 1.0), CountNeighbours(5), identity_score)
    a2 = BlackBoxAudit(functools.partial(_scaled, 3.0), CountNeighbours(5), identity_score)
    execute(a1, trials=30, seed=0, executor="inline", store=path)
    with pytest.raises(ValueError, match=r"the mechanism's parameters changed "
                                         r"\(functools\.partial\(.*_scaled\)"):
        execute(a2, trials=30, seed=0, executor="inline", store=path, resume=True)
    # same partial arguments: resumes, nothing recomputed
    again = BlackBoxAudit(functools.partial(_scaled, 1.0), CountNeighbours(5), identity_score)
    assert execute(again, trials=30, seed=0, executor="inline", store=path,
                   resume=True).computed == 0


def test_versions_and_describe_changes() -> None:
    v = versions(ea.FAST)
    assert v["numpy"] == np.__version__ and set(v) >= {"python", "dpaudit", "numpy"}
    old = {"identity": game_identity(ea.FAST), "versions": v}
    new = {"identity": game_identity(ea.FLAWED), "versions": {**v, "numpy": "0.0"}}
    msgs = describe_changes(old, new)
    assert msgs[0].startswith("the mechanism's parameters changed")
    assert "numpy version changed" in msgs[-1] and "-> 0.0" in msgs[-1]
    assert describe_changes(old, old) == []
    assert "no code fingerprints" in describe_changes({"game": {}}, new)[0]


# ------------------------------------------------------------------ declared identity (issue 32)
ENV = "DPAUDIT_TEST_NOISE_SCALE"


@pytest.mark.slow  # three inline runs
def test_identity_env_refuses_a_resume_with_another_value(tmp_path, monkeypatch) -> None:
    store = tmp_path / "s.sqlite"
    monkeypatch.setenv(ENV, "1.0")
    execute(ea.ENV_NOISE, trials=20, seed=0, executor="inline", store=store,
            identity_env=[ENV])
    assert execute(ea.ENV_NOISE, trials=30, seed=0, executor="inline", store=store,
                   resume=True, identity_env=[ENV]).reused == 20
    monkeypatch.setenv(ENV, "0.25")
    with pytest.raises(ValueError, match=f"environment variable {ENV} changed"):
        execute(ea.ENV_NOISE, trials=30, seed=0, executor="inline", store=store, resume=True,
                identity_env=[ENV])
    monkeypatch.delenv(ENV)
    with pytest.raises(ValueError, match=f"environment variable {ENV} was unset"):
        execute(ea.ENV_NOISE, trials=30, seed=0, executor="inline", store=store, resume=True,
                identity_env=[ENV])
    # undeclared, the code alone identifies the audit: the store says so instead of guessing
    with pytest.raises(ValueError, match="declared .--identity-env. in only one"):
        execute(ea.ENV_NOISE, trials=30, seed=0, executor="inline", store=store, resume=True)


def test_declared_identity_is_a_digest_and_absent_when_nothing_is_declared(monkeypatch) -> None:
    from dpaudit.engine.runner import default_config

    monkeypatch.setenv(ENV, "secret-value")
    plain = default_config(ea.ENV_NOISE, 0)
    assert "declared" not in plain  # audit ids of stores without declarations are unchanged
    cfg = default_config(ea.ENV_NOISE, 0, [ENV, ENV])
    assert list(cfg["declared"]["env"]) == [ENV]
    assert "secret-value" not in json.dumps(cfg)  # compared by digest, never stored
    with pytest.raises(ValueError, match="identity_env"):
        default_config(ea.ENV_NOISE, 0, ["A=B"])


def test_version_string_on_the_audit_object(tmp_path) -> None:
    import dataclasses

    store = tmp_path / "v.sqlite"
    v1 = dataclasses.replace(ea.ENV_NOISE, version="2026-11-01")
    execute(v1, trials=10, seed=0, executor="inline", store=store)
    v2 = dataclasses.replace(ea.ENV_NOISE, version="2026-11-27")
    with pytest.raises(ValueError, match="declared version changed"):
        execute(v2, trials=10, seed=0, executor="inline", store=store, resume=True)
    with pytest.raises(ValueError, match="version must be a string"):
        BlackBoxAudit(GaussianCount(), CountNeighbours(), identity_score, version=2)


@pytest.mark.slow  # five CLI runs
def test_resume_says_what_the_identity_covers(tmp_path, cli, monkeypatch) -> None:
    monkeypatch.setenv(ENV, "1.0")
    store = tmp_path / "c.sqlite"
    base = ["run", "engine_audits:ENV_NOISE", "--trials", "40", "--executor", "inline",
            "--store", str(store), "--json"]
    rc, _, err = cli(*base)
    assert rc == 0 and "note:" not in err
    rc, _, err = cli(*base, "--resume")
    assert rc == 0 and "Not covered: what the mechanism reads at call time" in err
    store2 = tmp_path / "d.sqlite"
    base2 = [*base[:-3], "--store", str(store2), "--identity-env", ENV, "--json"]
    assert cli(*base2)[0] == 0
    rc, _, err = cli(*base2, "--resume")
    assert rc == 0 and f"the environment variables {ENV}" in err and "Not covered" not in err
    monkeypatch.setenv(ENV, "0.1")
    rc, _, err = cli(*base2, "--resume")
    assert rc == 2 and f"environment variable {ENV} changed" in err
    rc, _, err = cli(*base[:-3], "--identity-env", "", "--json")
    assert rc == 2 and "--identity-env" in err
