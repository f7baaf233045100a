#!/usr/bin/env python3
"""PyTorch fixtures for Tritium's GPT (nn/gpt.h; tests/test_nn_gpt.cpp, case pytorch_parity).

Builds bench/torch_gpt_reference.py's GPT (nanoGPT's layout and names) at a tiny size with every
parameter drawn from N(0, 0.5^2) (LayerNorms around 1), runs it on random tokens and writes to
tests/fixtures/torch_gpt/:
  tiny.safetensors      the state_dict (a real PyTorch checkpoint; __metadata__ "keys" lists its
                        keys in PyTorch's named_parameters order, the tied head listed once)
  tiny_io.safetensors   "tokens", "targets" (i64 [2, 7]), "logits" [2, 7, 13], "loss" (scalar) and
                        "grad.<name>" for every parameter (the tied head's gradient included in
                        transformer.wte.weight's)
CI needs no PyTorch.
    /work/.torchvenv/bin/python scripts/make_torch_gpt_fixtures.py
"""
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from torch_gpt_reference import GPT  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "torch_gpt"


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(3131)
    model = GPT(vocab=13, context=9, layers=2, heads=2, width=8)
    with torch.no_grad():
        for name, p in model.named_parameters():
            base = 1.0 if ".ln_" in name and name.endswith(".weight") else 0.0
            p.copy_(base + 0.5 * torch.randn(p.shape, generator=g))
    tokens = torch.randint(0, 13, (2, 7), generator=g)
    targets = torch.randint(0, 13, (2, 7), generator=g)
    model.eval()
    T = tokens.shape[1]
    tr = model.transformer
    x = tr.wte(tokens) + tr.wpe(torch.arange(T))
    for block in tr.h:
        x = block(x)
    logits = tr.ln_f(x) @ tr.wte.weight.t()
    loss = model(tokens, targets)
    loss.backward()
    names = [n for n, _ in model.named_parameters()]
    OUT.mkdir(parents=True, exist_ok=True)
    save_file({n: p.detach().contiguous() for n, p in model.named_parameters()}, OUT / "tiny.safetensors",
              metadata={"format": "pt", "keys": json.dumps(names)})
    io = {"tokens": tokens, "targets": targets, "logits": logits.detach().contiguous(), "loss": loss.detach()}
    io.update({"grad." + n: p.grad.contiguous() for n, p in model.named_parameters()})
    save_file(io, OUT / "tiny_io.safetensors")
    print(f"wrote {OUT.relative_to(ROOT)}/tiny.safetensors ({len(names)} tensors), loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
