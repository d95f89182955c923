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


def test_pipelinedp_symmetric_variance_greybox_falsification():
    # bounds [-10, 10]: the sum of squares moves by 10^2 = 100 when [0] becomes [0, 10], its
    # noise is calibrated to (10^2 - 0) / 2 = 50 at epsilon 3 / 3 = 1, so the three Laplace
    # releases compose to 1 + 1 + 2 = 4 > 3 (deterministic: identical inputs to the noise)
    e = {x.key: x for x in pipelinedp_zoo.entries()}["pipeline-dp/VARIANCE-symmetric"]
    g = greybox_entry(e)
    assert g.runs == 2
    kinds = {f.kind: f for _, f in g.findings}
    assert kinds["sensitivity"].measured == 100.0 and kinds["sensitivity"].declared == 50.0
    assert kinds["composition"].measured == pytest.approx(4.0)
    assert kinds["composition"].epsilon_declared == 3.0
    from dpaudit.zoo.entry import locate

    path, line = locate(e.cause)
    assert path == "pipeline_dp/dp_computations.py" and line > 0


def test_joint_tail_recovers_the_three_noisy_values():
    # count 2, normalised sum 10, normalised sum of squares 100 (the exact values on [0, 10]):
    # mean = 10 / 2 = 5, variance = 100 / 2 - 5^2 = 25, so every part is at its threshold
    s = pipelinedp_zoo.JointTail(2.0, 10.0, 100.0)
    assert s((2.0, 5.0, 25.0)) == pytest.approx(0.0)
    # the noisy count 4 doubles the recovered sums: min(2, 1, 1) = 1
    assert s((4.0, 5.0, 25.0)) == pytest.approx(1.0)
    # a noisy count below 1 divides by 1 (PipelineDP clamps the denominator)
    assert s((0.5, 10.0, 0.0)) == pytest.approx(-1.5)


def test_fixed_public_violations_do_not_reproduce():
    res = {f.reference: (rep, ev) for f, rep, ev in check_all()}
    assert res["opendp/smartnoise-sdk issue #317"][0] is False
    assert "unbounded" in res["opendp/smartnoise-sdk issue #317"][1]
    assert res["opendp/smartnoise-sdk issue #201"][0] is False
    assert res["opendp/smartnoise-sdk issue #203"][0] is False
    odp = [v for k, v in res.items() if k.startswith("Casacuberta")]
    # current OpenDP states sensitivity 24577 >= the 1024 the rounding moves the sum
    assert odp and odp[0][0] is False and "moves by 1024" in odp[0][1]
