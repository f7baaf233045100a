#!/usr/bin/env python3
"""Checks that checkpoints Tritium writes load in PyTorch (issue 30, item 4).

Runs the test case test_nn_module_checkpoint/write_checkpoints_for_pytorch with
TRITIUM_INTEROP_DIR set, which writes, for each architecture of make_torch_module_fixtures.py
(built in Tritium with Tritium's own initialisation), tritium_<name>.safetensors (nn::save of the
model) and tritium_<name>_io.safetensors (an input and Tritium's output). Each model file is read
with safetensors.torch.load_file, loaded into the PyTorch model with load_state_dict(strict=True),
and PyTorch's output for the input must match Tritium's. Runs on the GPU machine (the lead's
check) and with PyTorch CPU anywhere:

    /work/.torchvenv/bin/python scripts/check_torch_interop.py [--tests build/tests/tritium-tests]
"""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_torch_module_fixtures import MODELS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", default=str(ROOT / "build" / "tests" / "tritium-tests"), help="the test binary")
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TRITIUM_INTEROP_DIR=tmp)
        subprocess.run([args.tests, "--run_test=test_nn_module_checkpoint/write_checkpoints_for_pytorch"], env=env,
                       check=True)
        for name, (make, _) in MODELS.items():
            state = load_file(os.path.join(tmp, f"tritium_{name}.safetensors"))
            io = load_file(os.path.join(tmp, f"tritium_{name}_io.safetensors"))
            model = make()
            model.load_state_dict(state, strict=True)  # raises on any missing / unexpected key or shape
            model.eval()
            with torch.no_grad():
                y = model(io["input"])
            err = ((y - io["output"]).norm() / io["output"].norm()).item()
            ok = err < 1e-5
            failures += not ok
            print(f"{name}: {len(state)} tensors loaded with strict=True; relative error of PyTorch's output vs "
                  f"Tritium's {err:.2e} {'ok' if ok else 'FAILED'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
