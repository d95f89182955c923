"""The runnable examples of docs/training.md run and hold (each ends with an assert)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from needs import need

pytestmark = [pytest.mark.torch, pytest.mark.slow]  # imports torch and Opacus (seconds)


@pytest.fixture(autouse=True, scope="module")
def _frameworks() -> None:
    """torch, Opacus and scikit-learn: imported when a test of this module runs, not when the
    suite is collected."""
    need("torch")
    need("opacus")
    need("sklearn")


DOC = Path(__file__).resolve().parents[1] / "docs" / "training.md"
BLOCKS = [b for b in re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
          if "audit_training" in b]


def test_the_doc_has_the_three_recipes() -> None:
    # own loop with make_private, canary examples, hand-written torch.func loop, token
    # canaries of an embedding model (black box)
    assert len(BLOCKS) == 4
    assert "GradientCanaries.for_model" in BLOCKS[0]
    assert "ExampleCanaries.for_model" in BLOCKS[1]
    assert "torch.func" in BLOCKS[2]
    assert "TokenCanaries.for_tokens" in BLOCKS[3]


@pytest.mark.slow
@pytest.mark.parametrize("index", range(4))
def test_doc_example_runs(index: int) -> None:
    exec(compile(BLOCKS[index], f"docs/training.md example {index}", "exec"), {})
