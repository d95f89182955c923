"""The plain Opacus training loop the studies and the training benchmarks run (a helper, not
a study: ``benchmarks/training_overhead.py`` and ``benchmarks/placement_device.py`` import it
from here)."""

from __future__ import annotations


def device_sync(device: str) -> None:
    """Wait for the work queued on ``device`` (a CUDA device; nothing to wait for on the CPU),
    so that a timer read next covers it."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def opacus_steps(model, optimizer, loader, steps: int,  # type: ignore[no-untyped-def]
                 device: str | None = None) -> None:
    """``steps`` steps of the plain Opacus loop: zero the gradients, cross-entropy of
    ``model`` on the loader's batch (moved to ``device`` first when given), backward,
    ``optimizer.step()`` (the loader is iterated again as often as needed; it stops
    mid-epoch at the last step)."""
    from torch import nn

    done = 0
    while done < steps:
        for xb, yb in loader:
            if device is not None:
                xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
            done += 1
            if done >= steps:
                return
