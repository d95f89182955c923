"""Ray executor on a small local cluster (2 CPUs): bit-for-bit the same trials as the process
pool, and one clear error when Ray is missing.  Ray is shut down after the module."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from dpaudit.engine import RayExecutor, TrialStore, execute, run_audit
from dpaudit.estimators.multi_run import multi_run
from dpaudit.games.examples import gaussian_count_audit
from needs import need

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_cluster():
    ray = need("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.mark.slow  # starts a Ray cluster
def test_ray_equals_process_pool_bit_for_bit(ray_cluster, tmp_path) -> None:
    """One Ray run (the costly part: tasks ship to Ray workers) with a store and the audit on
    top, against the process pool: the same trials bit for bit and the same bound."""
    audit = gaussian_count_audit(sigma=1.0)
    pool = execute(audit, trials=600, seed=21, executor="process", workers=2)
    a = run_audit(audit, trials=600, seed=21, executor="ray", workers=2, chunk_size=50,
                  store=tmp_path / "r.sqlite", claimed_epsilon=1.0)
    np.testing.assert_array_equal(a.run.records, pool.records)
    assert a.run.executor == "ray" and not a.failures and a.run.computed == 600
    with TrialStore(tmp_path / "r.sqlite", readonly=True) as st:
        t, data = st.records(a.run.audit_id)
    np.testing.assert_array_equal(data, pool.records)
    want = multi_run(pool.records[:, 0] > 0.5, pool.records[:, 1], delta=0.0, confidence=0.95,
                     seed=21)
    assert a.result.epsilon == want.epsilon
    assert ray_cluster.is_initialized()  # an executor does not shut down a cluster it joined


def test_missing_ray_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'dpaudit\[ray\]'"):
        RayExecutor(workers=1)
