"""The models, optimizer and loop of ``test_training_own_model.py`` (torch and Opacus
imported here, when that module's tests run, not when the suite is collected)."""

from __future__ import annotations

import torch
from opacus import PrivacyEngine
from opacus.optimizers import DPOptimizer
from opacus.validators import ModuleValidator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from dpaudit.training import GradientCanaries, audit_training

__all__ = ["torch", "nn", "PrivacyEngine", "DPOptimizer", "ModuleValidator", "DataLoader",
           "TensorDataset", "GradientCanaries", "audit_training", "V", "_SkipEveryOther",
           "_private", "_train", "_digits", "_Encoder", "_Bag", "_GroupNorm", "_Tied"]

V = 40  # vocabulary of the token models



class _SkipEveryOther(DPOptimizer):
    """The flaw users ship: ``add_noise`` skipped on every second step, sigma intact."""

    calls = 0

    def add_noise(self) -> None:
        _SkipEveryOther.calls += 1
        if _SkipEveryOther.calls % 2:
            super().add_noise()
        else:  # what add_noise does, without the noise
            for p in self.params:
                p.grad = p.summed_grad.view_as(p)



def _private(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, accountant: str = "prv",
             batch: int = 25) -> tuple[nn.Module, DPOptimizer, DataLoader, PrivacyEngine]:
    torch.manual_seed(0)
    engine = PrivacyEngine(accountant=accountant)
    model, opt, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
        data_loader=DataLoader(TensorDataset(x, y), batch_size=batch),
        noise_multiplier=1.0, max_grad_norm=1.0)
    return model, opt, loader, engine



def _train(model: nn.Module, opt: DPOptimizer, loader: DataLoader, epochs: int,
           sigma_at: object = None) -> int:
    step = 0
    for _ in range(epochs):
        for xb, yb in loader:
            if sigma_at is not None:
                opt.noise_multiplier = sigma_at(step)  # type: ignore[operator]
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
            step += 1
    return step



def _digits() -> tuple[torch.Tensor, torch.Tensor]:
    from dpaudit.training import load_digits_data

    d = load_digits_data(seed=0)
    return d.x_train[:500], d.y_train[:500]



class _Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(V, 16)
        self.enc = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)
        self.head = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.enc(self.emb(x)).mean(1))



class _Bag(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.EmbeddingBag(V, 16, mode="mean")
        self.ln = nn.LayerNorm(16)
        self.head = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.ln(self.emb(x.reshape(-1), torch.arange(0, x.numel(),
                                                                      x.shape[1]))))



class _GroupNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(1, 8, 3)
        self.gn = nn.GroupNorm(2, 8)
        self.head = nn.Linear(8 * 6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.gn(self.conv(x[:, None].float() / V))).flatten(1))



class _Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(V, 16)
        self.out = nn.Linear(16, V, bias=False)
        self.out.weight = self.emb.weight                    # tied
        self.head = nn.Linear(V, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.out(self.emb(x).mean(1)))
