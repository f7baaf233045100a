#!/usr/bin/env python3
"""torch.utils.data.DataLoader beside `tritium-bench --data-loader`: the same Fashion-MNIST training
tensors (normalised as nn::FashionMNIST), a TensorDataset, batch 128, shuffled; batches/s of an
epoch (after an untimed one) with 0, 1, 2 workers, idle and with a consumer sleeping --work-us per
batch. PyTorch's workers are processes; the default collate indexes each sample and stacks them.
    /work/.torchvenv/bin/python bench/compare_data_loader.py [--workers 0,1,2] [--work-us 2000]"""
import argparse
import gzip
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset


def idx(path, header):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=header)


def epoch_seconds(loader, work_us):
    for _ in loader:
        pass
    t0 = time.perf_counter()
    n = 0
    for _ in loader:
        if work_us:
            time.sleep(work_us * 1e-6)
        n += 1
    return time.perf_counter() - t0, n


def work_seconds(batches, work_us):
    t0 = time.perf_counter()
    for _ in range(batches):
        time.sleep(work_us * 1e-6)
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--workers", default="0,1,2")
    p.add_argument("--work-us", type=int, default=2000)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    x = idx(f"{a.data}/train-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float32)
    y = idx(f"{a.data}/train-labels-idx1-ubyte.gz", 8).astype(np.int64)
    x = (x / 255 - 0.2860) / 0.3530
    ds = TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    print(f"torch DataLoader over Fashion-MNIST train ({len(ds)} samples), batch {a.batch_size}, shuffled")
    print(f"{'workers':>8}  {'batches/s':>14}  {'samples/s':>14}  {'epoch s with work (work alone)':>30}")
    for w in (int(v) for v in a.workers.split(",")):
        loader = DataLoader(ds, batch_size=a.batch_size, shuffle=True, num_workers=w,
                            persistent_workers=w > 0, generator=torch.Generator().manual_seed(0))
        idle, n = epoch_seconds(loader, 0)
        busy, n = epoch_seconds(loader, a.work_us)
        print(f"{w:>8}  {n / idle:>14.0f}  {n * a.batch_size / idle:>14.0f}  {busy:>18.3f} ({work_seconds(n, a.work_us):.3f})")


if __name__ == "__main__":
    main()
