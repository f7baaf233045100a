#!/usr/bin/env python3
"""torch.profiler over the CNN of bench/torch_mnist_reference.py (conv 3x3 32 and 64 channels,
batch norm, ReLU, max pool 2x2, 3136-128-10, AdamW), for the CPU share-of-time comparison with
`train-mnist --model cnn --profile FILE` (docs/cpu-backend.md). Random inputs: the time per op
does not depend on the data.

    OMP_NUM_THREADS=2 taskset -c 0,1 python3 bench/torch_cnn_profile.py [STEPS] [THREADS]
"""
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    if len(sys.argv) > 2:
        torch.set_num_threads(int(sys.argv[2]))
    torch.manual_seed(0)
    nn = torch.nn
    stage = lambda i, o: [nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(2)]
    model = nn.Sequential(nn.Unflatten(1, (1, 28, 28)), *stage(1, 32), *stage(32, 64), nn.Flatten(),
                          nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.randn(128, 784), torch.randint(0, 10, (128,))

    def step():
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()

    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dt = time.perf_counter() - t0
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads: {steps * 128 / dt:.0f} samples/s unprofiled")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))


if __name__ == "__main__":
    main()
