"""SmartNoise SQL and PipelineDP: the grey-box pass on their Python layers, the documented
claims, and the run-time checks of fixed public violations (pinned versions)."""

import pytest
from zoo_needs import need  # noqa: E402

need("snsql")
need("pipeline_dp")

from dpaudit.zoo import pipelinedp_zoo, smartnoise_zoo  # noqa: E402
from dpaudit.zoo.fixed import check_all  # noqa: E402
from dpaudit.zoo.greybox_check import greybox_entry  # noqa: E402


def test_smartnoise_claims_are_its_own_costs():
    # Privacy(epsilon=1) is spent per noisy aggregate: AVG = SUM / COUNT costs 2
    costs = {e.key: e.epsilon for e in smartnoise_zoo.entries()}
    assert costs == {"smartnoise-sql/COUNT": 1.0, "smartnoise-sql/SUM": 1.0,
                     "smartnoise-sql/AVG": 2.0}


def test_smartnoise_avg_declares_the_sum_and_count_sensitivities():
    e = {x.key: x for x in smartnoise_zoo.entries()}["smartnoise-sql/AVG"]
    g = greybox_entry(e)
    assert g.findings == () and g.runs == 4 and g.primitive_calls == 8


@pytest.mark.parametrize("key", ["pipeline-dp/COUNT", "pipeline-dp/SUM", "pipeline-dp/MEAN",
                                 "pipeline-dp/VARIANCE"])
def test_pipelinedp_has_no_greybox_finding(key):
    e = {x.key: x for x in pipelinedp_zoo.entries()}[key]
    g = greybox_entry(e)
    assert g.findings == () and g.primitive_calls > 0


def test_fixed_public_violations_do_not_reproduce():
    res = {f.reference: (rep, ev) for f, rep, ev in check_all()}
    assert res["opendp/smartnoise-sdk issue #317"][0] is False
    assert "unbounded" in res["opendp/smartnoise-sdk issue #317"][1]
    assert res["opendp/smartnoise-sdk issue #201"][0] is False
    assert res["opendp/smartnoise-sdk issue #203"][0] is False
