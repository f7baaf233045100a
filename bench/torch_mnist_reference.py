#!/usr/bin/env python3
"""PyTorch eager reference for train-mnist: the same models (the MLP 784-512-512-10 with ReLU, or
the CNN: two stages of conv 3x3 (32, then 64 channels)-batchnorm-relu-maxpool 2x2, then
3136-128-10), AdamW lr 1e-3 weight decay 1e-2, batch 128, shuffled, the same normalisation;
prints test accuracy and samples/s per epoch. Run on the GPU machine beside
`train-mnist --backend cuda [--model cnn]`.

    python3 bench/torch_mnist_reference.py DATA_DIR [EPOCHS] [mlp|cnn] [cuda|cpu] [BATCHES]
BATCHES (default all) cuts each epoch to that many batches, as train-mnist's --limit-batches. On
the CPU the thread count is torch's default unless OMP_NUM_THREADS says otherwise.
"""
import gzip
import sys
import time

import numpy as np
import torch


def idx(path, offset):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def main():
    root = sys.argv[1]
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    kind = sys.argv[3] if len(sys.argv) > 3 else "mlp"
    dev = sys.argv[4] if len(sys.argv) > 4 else "cuda"
    limit = int(sys.argv[5]) if len(sys.argv) > 5 else 1 << 30
    xs = torch.tensor(idx(f"{root}/train-images-idx3-ubyte.gz", 16).reshape(-1, 784), dtype=torch.float32)
    ys = torch.tensor(idx(f"{root}/train-labels-idx1-ubyte.gz", 8), dtype=torch.int64)
    xt = torch.tensor(idx(f"{root}/t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784), dtype=torch.float32)
    yt = torch.tensor(idx(f"{root}/t10k-labels-idx1-ubyte.gz", 8), dtype=torch.int64)
    norm = lambda x: ((x / 255.0) - 0.2860) / 0.3530
    xs, xt = norm(xs), norm(xt).to(dev)
    yt = yt.to(dev)
    torch.manual_seed(0)
    nn = torch.nn
    if kind == "cnn":
        stage = lambda i, o: [nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(2)]
        model = nn.Sequential(nn.Unflatten(1, (1, 28, 28)), *stage(1, 32), *stage(32, 64), nn.Flatten(),
                              nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10)).to(dev)
    else:
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    loss_fn = torch.nn.CrossEntropyLoss()
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(xs.shape[0])
        model.train()
        sync()
        t0 = time.perf_counter()
        for i in range(0, min(xs.shape[0] - 127, 128 * limit), 128):
            idx_b = perm[i:i + 128]
            x, y = xs[idx_b].to(dev), ys[idx_b].to(dev)
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss.item()  # as train-mnist reads the loss every step
        sync()
        dt = time.perf_counter() - t0
        model.eval()
        with torch.no_grad():
            acc = (model(xt).argmax(1) == yt).float().mean().item()
        n = min(xs.shape[0] // 128, limit) * 128
        print(f"torch epoch {epoch}: test accuracy {acc * 100:.2f}%, {dt:.2f} s ({n / dt:.0f} samples/s, "
              f"{torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
