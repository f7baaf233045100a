#!/usr/bin/env python3
"""PyTorch fixtures for Tritium's recurrent modules (issue 30: nn/rnn.h).

For each model below, writes to tests/fixtures/torch_modules/:
  rnn_<name>.safetensors     safetensors.torch.save_file(model.state_dict()): a real PyTorch checkpoint
  rnn_<name>_io.safetensors  the inputs ("input", and "h0" / "c0" where given), the outputs
                             ("out0", "out1", ...: output, h_n, c_n; or h', c' for cells), a random
                             gradient per output ("grad_out0", ...) and PyTorch's gradients of
                             sum(out_i * grad_out_i) for the inputs ("grad_input", "grad_h0",
                             "grad_c0") and every parameter ("grad.<key>"); in __metadata__ "keys"
                             (the state_dict keys in PyTorch's order, JSON) and "config" (JSON: the
                             module and its arguments).
tests/test_nn_rnn.cpp builds the same module in Tritium, checks its state_dict keys, loads the
checkpoint and reproduces outputs and gradients (float32). CI needs no PyTorch.

    /work/.torchvenv/bin/python scripts/make_torch_rnn_fixtures.py          # (re)write the files
    /work/.torchvenv/bin/python scripts/make_torch_rnn_fixtures.py --check  # are the committed ones current?
"""
import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn as nn
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "tests" / "fixtures" / "torch_modules"

# name -> (config, input shape, whether h0 (and c0) are given)
MODELS = {
    "lstm": (dict(module="LSTM", input_size=5, hidden_size=7, num_layers=2, bidirectional=True), (4, 3, 5), True),
    "gru": (dict(module="GRU", input_size=5, hidden_size=6, num_layers=2, batch_first=True, bias=False), (3, 4, 5), False),
    "rnn_relu": (dict(module="RNN", input_size=4, hidden_size=6, nonlinearity="relu", bidirectional=True), (5, 2, 4), True),
    "rnn_unbatched": (dict(module="RNN", input_size=3, hidden_size=5, num_layers=2), (4, 3), True),
    "lstm_cell": (dict(module="LSTMCell", input_size=4, hidden_size=6), (3, 4), True),
    "gru_cell": (dict(module="GRUCell", input_size=4, hidden_size=6, bias=False), (3, 4), True),
}


def make(config):
    args = {k: v for k, v in config.items() if k not in ("module", "input_size", "hidden_size")}
    return getattr(nn, config["module"])(config["input_size"], config["hidden_size"], **args)


def hidden_shape(model, config, input_shape):
    cell = config["module"].endswith("Cell")
    H = config["hidden_size"]
    if cell:
        return (input_shape[0], H)
    D = 2 if config.get("bidirectional") else 1
    L = config.get("num_layers", 1)
    if len(input_shape) == 2:
        return (L * D, H)
    B = input_shape[0] if config.get("batch_first") else input_shape[1]
    return (L * D, B, H)


def build(name, seed):
    config, input_shape, with_h0 = MODELS[name]
    torch.manual_seed(seed)
    model = make(config)  # PyTorch's own initialisation
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(input_shape, generator=g).requires_grad_()
    inputs = {"input": x}
    lstm = config["module"].startswith("LSTM")
    if with_h0:
        hs = hidden_shape(model, config, input_shape)
        inputs["h0"] = torch.randn(hs, generator=g).requires_grad_()
        if lstm:
            inputs["c0"] = torch.randn(hs, generator=g).requires_grad_()
    cell = config["module"].endswith("Cell")
    if "h0" in inputs:
        state = (inputs["h0"], inputs["c0"]) if lstm else inputs["h0"]
        res = model(x, state)
    else:
        res = model(x)
    if cell:
        outs = list(res) if lstm else [res]
    else:
        out, h = res
        outs = [out] + (list(h) if lstm else [h])
    grads_out = [torch.randn(o.shape, generator=g) for o in outs]
    loss = sum((o * go).sum() for o, go in zip(outs, grads_out))
    loss.backward()
    io = dict((k, v.detach().contiguous()) for k, v in inputs.items())
    for i, (o, go) in enumerate(zip(outs, grads_out)):
        io[f"out{i}"] = o.detach().contiguous()
        io[f"grad_out{i}"] = go.contiguous()
    for k, v in inputs.items():
        io["grad_" + k] = v.grad.contiguous()
    for k, p in model.named_parameters():
        io["grad." + k] = p.grad.contiguous()
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    meta = {"keys": json.dumps(list(model.state_dict().keys())), "config": json.dumps(config)}
    return state, io, meta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = ap.parse_args()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stale = []
    for i, name in enumerate(MODELS):
        state, io, meta = build(name, 3000 + i)
        model_path, io_path = OUT_DIR / f"rnn_{name}.safetensors", OUT_DIR / f"rnn_{name}_io.safetensors"
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
