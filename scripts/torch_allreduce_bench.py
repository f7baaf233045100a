"""PyTorch's all_reduce bus bandwidth, printed as tritium-dist-worker --mode allreduce-bench prints
ours, so the two runs of docs/distributed.md compare line by line (issue 32: ours >= 0.95 x at 256 MB).
    torchrun --nproc-per-node 2 scripts/torch_allreduce_bench.py [--device cuda] [--bytes N] [--iters K]
Never a build or test dependency."""
import argparse
import os
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
p.add_argument("--bytes", type=int, default=0)
p.add_argument("--iters", type=int, default=20)
a = p.parse_args()
cuda = a.device == "cuda"
if cuda:
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl" if cuda else "gloo")
world = dist.get_world_size()
device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
sync = torch.cuda.synchronize if cuda else (lambda: None)
for nbytes in [a.bytes] if a.bytes else [1 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]:
    t = torch.zeros(nbytes // 4, dtype=torch.float32, device=device)
    for _ in range(5):
        dist.all_reduce(t)
    sync()
    dist.barrier()
    start = time.perf_counter()
    works = [dist.all_reduce(t, async_op=True) for _ in range(a.iters)]
    for w in works:
        w.wait()
    sync()
    seconds = (time.perf_counter() - start) / a.iters
    algbw = nbytes / seconds / 1e9
    if dist.get_rank() == 0:
        print(f"all_reduce {dist.get_backend()} {world} ranks {nbytes} bytes: {seconds * 1e3:.3f} ms, "
              f"algbw {algbw:.2f} GB/s, busbw {algbw * 2 * (world - 1) / world:.2f} GB/s", flush=True)
dist.destroy_process_group()
