#!/usr/bin/env python3
"""PyTorch module checkpoints for Tritium's nn::Module tests (issue 30, items 4 and 5).

For each model below, writes to tests/fixtures/torch_modules/:
  <name>.safetensors      safetensors.torch.save_file(model.state_dict()): a real PyTorch checkpoint
  <name>_io.safetensors   "input" and "output" (model(input) in eval mode, float32), and in
                          __metadata__ "keys": the state_dict keys in PyTorch's order (JSON list)
tests/test_nn_module_checkpoint.cpp builds the same architecture in Tritium, checks its
state_dict keys equal "keys", loads <name>.safetensors and reproduces "output". CI needs no
PyTorch. scripts/check_torch_interop.py checks the other direction (Tritium's files in PyTorch).

    /work/.torchvenv/bin/python scripts/make_torch_module_fixtures.py          # (re)write the files
    /work/.torchvenv/bin/python scripts/make_torch_module_fixtures.py --check  # are the committed ones current?
"""
import argparse
import json
import sys
from collections import OrderedDict
from pathlib import Path

import torch
import torch.nn as nn
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "tests" / "fixtures" / "torch_modules"


def mlp():
    """An MLP Sequential: Linear(5, 7), ReLU, Linear(7, 3), Tanh."""
    return nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3), nn.Tanh())


class Block(nn.Module):
    """Linear -> LayerNorm -> GELU, plus a persistent buffer added and a non-persistent one unused."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)
        self.norm = nn.LayerNorm(6)
        self.act = nn.GELU()
        self.register_buffer("shift", torch.zeros(6))
        self.register_buffer("scratch", torch.zeros(6), persistent=False)

    def forward(self, x):
        return self.act(self.norm(self.proj(x))) + self.shift


class Nested(nn.Module):
    """Named submodules two levels deep, a ModuleList, a named Sequential, float and int64 buffers."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor(0.5))
        self.register_buffer("steps", torch.tensor(3, dtype=torch.int64))
        self.embed = nn.Linear(4, 6)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Sequential(OrderedDict(fc=nn.Linear(6, 2), act=nn.Sigmoid()))

    def forward(self, x):
        h = self.embed(x)
        for b in self.blocks:
            h = b(h)
        return self.head(h) * self.scale


MODELS = {"mlp": (mlp, (4, 5)), "nested": (Nested, (3, 4))}


def build(name, seed):
    """The model with every parameter and floating buffer drawn from N(0, 0.5^2) (LayerNorm's
    ones/zeros too, so a load that skipped them would show), and an input."""
    make, input_shape = MODELS[name]
    g = torch.Generator().manual_seed(seed)
    model = make()
    with torch.no_grad():
        for _, t in list(model.named_parameters()) + list(model.named_buffers()):
            if t.is_floating_point():
                t.copy_(torch.randn(t.shape, generator=g) * 0.5)
    model.eval()
    x = torch.randn(input_shape, generator=g)
    return model, x


def fixture_files(name):
    return OUT_DIR / f"{name}.safetensors", OUT_DIR / f"{name}_io.safetensors"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = ap.parse_args()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stale = []
    for i, name in enumerate(MODELS):
        model, x = build(name, 1000 + i)
        with torch.no_grad():
            y = model(x)
        state = {k: v.contiguous() for k, v in model.state_dict().items()}
        io = {"input": x.contiguous(), "output": y.contiguous()}
        meta = {"keys": json.dumps(list(model.state_dict().keys()))}
        model_path, io_path = fixture_files(name)
        if args.check:
            for path, tensors in ((model_path, state), (io_path, io)):
                old = load_file(path) if path.exists() else {}
                if old.keys() != tensors.keys() or any(not torch.equal(old[k], tensors[k]) for k in tensors):
                    stale.append(path.name)
            continue
        save_file(state, model_path, metadata={"format": "pt"})
        save_file(io, io_path, metadata=meta)
        print(f"wrote {model_path.relative_to(ROOT)} ({len(state)} tensors) and {io_path.name}")
    if stale:
        print("stale fixtures:", ", ".join(stale))
        sys.exit(1)


if __name__ == "__main__":
    main()
