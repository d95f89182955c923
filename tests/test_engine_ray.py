"""Ray executor on a small local cluster (2 CPUs): bit-for-bit the same trials as the process
pool, and one clear error when Ray is missing.  Ray is shut down after the module."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from dpaudit.engine import RayExecutor, execute, run_audit
from dpaudit.games.examples import gaussian_count_audit


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_ray_equals_process_pool_bit_for_bit(ray_cluster, tmp_path) -> None:
    audit = gaussian_count_audit(sigma=1.0)
    pool = execute(audit, trials=600, seed=21, executor="process", workers=2)
    ray = execute(audit, trials=600, seed=21, executor="ray", workers=2, chunk_size=50,
                  store=tmp_path / "r.sqlite")
    np.testing.assert_array_equal(ray.records, pool.records)
    assert ray.executor == "ray" and not ray.failures
    # and the audit on top: the same bound as on the pool
    a = run_audit(audit, trials=600, seed=21, executor="ray", workers=2, claimed_epsilon=1.0)
    b = run_audit(audit, trials=600, seed=21, executor="inline", claimed_epsilon=1.0)
    assert a.result.epsilon == b.result.epsilon
    assert ray_cluster.is_initialized()  # an executor does not shut down a cluster it joined


def test_missing_ray_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'dpaudit\[ray\]'"):
        RayExecutor(workers=1)
