#!/usr/bin/env python3
"""PyTorch references for Tritium's transformer modules (nn/transformer.h, issue 31 item 1).

For each case below, writes tests/fixtures/torch_transformer/<name>.safetensors holding
  param.<key>     the module's state_dict (PyTorch's keys and order: metadata "keys")
  in.<name>       the inputs (query/key/value, src/tgt/memory, masks: bool masks as uint8)
  out             the first output in eval mode (dropout off), float32
  weights         MultiheadAttention's attention weights, when need_weights
  seed.grad       R, the loss being sum(out * R)
  grad.in.<name>  d loss / d input, for every floating input
  grad.<key>      d loss / d parameter
and in __metadata__ "keys" (JSON list) and "config" (JSON: the constructor and forward arguments).
tests/test_nn_transformer.cpp builds the same module, loads param.*, and compares everything.

    /work/.torchvenv/bin/python scripts/make_torch_transformer_fixtures.py          # (re)write
    /work/.torchvenv/bin/python scripts/make_torch_transformer_fixtures.py --check  # current?
"""
import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn as nn
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "tests" / "fixtures" / "torch_transformer"


def causal(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)


def padding(batch, length, gen):
    m = torch.rand(batch, length, generator=gen) < 0.3
    m[:, 0] = False  # every row keeps at least one key
    return m


def mha_cases(gen):
    r = lambda *s: torch.randn(*s, generator=gen)
    cases = []
    # self-attention, sequence first, averaged weights
    x = r(5, 3, 8)
    cases.append(("mha_self", dict(embed_dim=8, num_heads=2), dict(query=x, key=x, value=x), dict(need_weights=True)))
    # cross-attention, batch first, bool key padding and attention masks, per-head weights
    cases.append(("mha_cross_masks", dict(embed_dim=8, num_heads=4, batch_first=True),
                  dict(query=r(2, 4, 8), key=r(2, 6, 8), value=r(2, 6, 8), key_padding_mask=padding(2, 6, gen),
                       attn_mask=torch.rand(4, 6, generator=gen) < 0.2),
                  dict(need_weights=True, average_attn_weights=False)))
    # kdim / vdim differ (separate projections), float 3-D mask, no bias, no weights
    cases.append(("mha_kvdim_float_mask", dict(embed_dim=6, num_heads=3, kdim=5, vdim=7, bias=False),
                  dict(query=r(4, 2, 6), key=r(3, 2, 5), value=r(3, 2, 7), attn_mask=r(2 * 3, 4, 3)),
                  dict(need_weights=False)))
    # causal self-attention through the fused kernel (is_causal with its mask, no weights)
    x = r(2, 7, 16)
    cases.append(("mha_causal", dict(embed_dim=16, num_heads=2, batch_first=True),
                  dict(query=x, key=x, value=x, attn_mask=causal(7)), dict(need_weights=False, is_causal=True)))
    # unbatched
    x = r(5, 8)
    cases.append(("mha_unbatched", dict(embed_dim=8, num_heads=2), dict(query=x, key=x, value=x,
                  key_padding_mask=torch.tensor([False, False, True, False, True])), dict(need_weights=True)))
    return cases


def layer_cases(gen):
    r = lambda *s: torch.randn(*s, generator=gen)
    cases = []
    cases.append(("encoder_post_relu", "TransformerEncoderLayer",
                  dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.1),
                  dict(src=r(5, 3, 8), src_key_padding_mask=padding(3, 5, gen)), {}))
    cases.append(("encoder_pre_gelu_causal", "TransformerEncoderLayer",
                  dict(d_model=8, nhead=4, dim_feedforward=12, activation="gelu", batch_first=True, norm_first=True),
                  dict(src=r(2, 6, 8), src_mask=causal(6)), dict(is_causal=True)))
    cases.append(("decoder_post", "TransformerDecoderLayer", dict(d_model=8, nhead=2, dim_feedforward=16),
                  dict(tgt=r(4, 2, 8), memory=r(6, 2, 8), tgt_mask=causal(4),
                       memory_key_padding_mask=padding(2, 6, gen)), dict(tgt_is_causal=True)))
    cases.append(("decoder_pre_bf", "TransformerDecoderLayer",
                  dict(d_model=8, nhead=2, dim_feedforward=10, activation="gelu", batch_first=True, norm_first=True,
                       bias=False),
                  dict(tgt=r(2, 3, 8), memory=r(2, 5, 8), tgt_key_padding_mask=padding(2, 3, gen)), {}))
    cases.append(("encoder_stack", "TransformerEncoder", dict(d_model=8, nhead=2, dim_feedforward=16, num_layers=2),
                  dict(src=r(4, 2, 8), mask=causal(4)), dict(is_causal=True)))
    cases.append(("decoder_stack", "TransformerDecoder", dict(d_model=8, nhead=2, dim_feedforward=16, num_layers=2),
                  dict(tgt=r(3, 2, 8), memory=r(5, 2, 8)), {}))
    return cases


def build_layer(kind, cfg):
    cfg = dict(cfg)
    if kind in ("TransformerEncoder", "TransformerDecoder"):
        n = cfg.pop("num_layers")
        layer_cls = nn.TransformerEncoderLayer if kind == "TransformerEncoder" else nn.TransformerDecoderLayer
        d = cfg["d_model"]
        stack_cls = nn.TransformerEncoder if kind == "TransformerEncoder" else nn.TransformerDecoder
        kw = dict(enable_nested_tensor=False) if kind == "TransformerEncoder" else {}
        return stack_cls(layer_cls(**cfg), n, norm=nn.LayerNorm(d), **kw)
    return getattr(nn, kind)(**cfg)


def randomise(module, gen):
    with torch.no_grad():
        for _, p in module.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5)


def record(name, module, inputs, kwargs, config, gen):
    module.eval()
    floats = {k: v.clone().requires_grad_(True) for k, v in inputs.items() if v.dtype.is_floating_point and
              "mask" not in k}
    args = {k: floats.get(k, v) for k, v in inputs.items()}
    # self-attention: one tensor for query, key and value (so its gradient sums the three)
    if "query" in inputs and inputs["query"] is inputs["key"] and inputs["key"] is inputs["value"]:
        floats = {"query": inputs["query"].clone().requires_grad_(True)}
        args.update(query=floats["query"], key=floats["query"], value=floats["query"])
    result = module(**args, **kwargs)
    out, weights = (result if isinstance(result, tuple) else (result, None))
    seed = torch.randn(out.shape, generator=gen)
    (out * seed).sum().backward()
    tensors = {f"param.{k}": v.detach().contiguous() for k, v in module.state_dict().items()}
    for k, v in inputs.items():
        tensors[f"in.{k}"] = v.to(torch.uint8) if v.dtype == torch.bool else v.clone().contiguous()
    tensors["out"] = out.detach().contiguous()
    if weights is not None:
        tensors["weights"] = weights.detach().contiguous()
    tensors["seed.grad"] = seed
    for k, v in floats.items():
        tensors[f"grad.in.{k}"] = v.grad.contiguous()
    for k, p in module.named_parameters():
        tensors[f"grad.{k}"] = p.grad.contiguous()
    meta = {"keys": json.dumps(list(module.state_dict().keys())), "config": json.dumps(config),
            "format": "pt"}
    return tensors, meta


def all_fixtures():
    gen = torch.Generator().manual_seed(31)
    torch.manual_seed(31)
    out = {}
    for name, ctor, inputs, kwargs in mha_cases(gen):
        m = nn.MultiheadAttention(**ctor)
        randomise(m, gen)
        out[name] = record(name, m, inputs, kwargs, {"module": "MultiheadAttention", "ctor": ctor, "forward": kwargs,
                                                     "self": inputs["query"] is inputs["key"]}, gen)
    for name, kind, ctor, inputs, kwargs in layer_cases(gen):
        m = build_layer(kind, ctor)
        randomise(m, gen)
        out[name] = record(name, m, inputs, kwargs, {"module": kind, "ctor": ctor, "forward": kwargs}, gen)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stale = []
    for name, (tensors, meta) in all_fixtures().items():
        path = OUT_DIR / f"{name}.safetensors"
        if args.check:
            if not path.exists():
                stale.append(name)
                continue
            old = load_file(path)
            if old.keys() != tensors.keys() or any(not torch.allclose(old[k].double(), tensors[k].double(), atol=1e-6)
                                                   for k in tensors):
                stale.append(name)
        else:
            save_file(tensors, path, metadata=meta)
            print(f"wrote {path.relative_to(ROOT)} ({len(tensors)} tensors)")
    if args.check:
        print("stale: " + ", ".join(stale) if stale else "all current")
        sys.exit(1 if stale else 0)


if __name__ == "__main__":
    main()
