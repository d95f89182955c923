"""Real DP-SGD training with PyTorch (+ Opacus); the only package that imports torch."""
