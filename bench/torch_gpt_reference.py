#!/usr/bin/env python3
"""PyTorch eager reference for train-gpt (issue 31): the same byte-level GPT (nanoGPT's layout and
parameter names: transformer.wte / wpe / h.<i>.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc,
mlp.c_proj} / ln_f, the head tied to wte), the same fortune corpus and split (every 10th fortune
held out), AdamW (betas 0.9, 0.99; weight decay on the matrices only), linear warm-up then cosine
learning rate, and the same held-out evaluation. Prints the same progress lines as train-gpt.

--init FILE loads an initialisation written by `train-gpt --steps 0 --generate 0 --save FILE`, so
both programs start from the same weights and their loss curves can be compared (the batches are
drawn by different generators, so the curves agree within run-to-run noise, not bit for bit).

    python3 bench/torch_gpt_reference.py [--device cpu|cuda] [--threads N] [--init FILE] [options]
    (the architecture and schedule options are train-gpt's, with the same CPU / GPU defaults)

Under torchrun (WORLD_SIZE set) it trains data-parallel with DistributedDataParallel (NCCL on
cuda, Gloo on the CPU): --batch-size stays the global batch, each rank draws its own share from a
generator seeded by its rank, rank 0 alone prints - the PyTorch side of issue 33's scaling table:
    torchrun --nproc-per-node 2 bench/torch_gpt_reference.py --device cuda --amp bf16 --steps 300
The last line also gives the steady rate (tokens/s over the steps after the first 10), which
leaves out torch.compile's tracing and any first-step costs.
"""
import argparse
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNorm(nn.Module):
    def __init__(self, n, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads, dropout, bias):
        super().__init__()
        self.c_attn = nn.Linear(width, 3 * width, bias=bias)
        self.c_proj = nn.Linear(width, width, bias=bias)
        self.resid_dropout = nn.Dropout(dropout)
        self.heads, self.width = heads, width

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).reshape(B, T, C)))


class MLP(nn.Module):
    def __init__(self, width, dropout, bias):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * width, width, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, width, heads, dropout, bias):
        super().__init__()
        self.ln_1 = LayerNorm(width, bias)
        self.attn = CausalSelfAttention(width, heads, dropout, bias)
        self.ln_2 = LayerNorm(width, bias)
        self.mlp = MLP(width, dropout, bias)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, context, layers, heads, width, dropout=0.0, bias=True):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, width), wpe=nn.Embedding(context, width), drop=nn.Dropout(dropout),
            h=nn.ModuleList([Block(width, heads, dropout, bias) for _ in range(layers)]),
            ln_f=LayerNorm(width, bias)))
        # nanoGPT's initialisation (train-gpt's: N(0, 0.02), residual projections / sqrt(2 layers)).
        for name, p in self.named_parameters():
            if ".ln_" in name:
                continue
            if name.endswith(".bias"):
                nn.init.zeros_(p)
            else:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T, device=idx.device)))
        for block in self.transformer.h:
            x = block(x)
        logits = self.transformer.ln_f(x) @ self.transformer.wte.weight.t()  # the tied head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def fortunes(directory, held_out_every=10):
    """train-gpt's corpus: each fortune (with its '%' line) one document; every 10th held out."""
    docs = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if "." in name or os.path.islink(path) or not os.path.isfile(path):
            continue
        doc = b""
        with open(path, "rb") as f:
            content = f.read()
        lines = content.split(b"\n")
        if content.endswith(b"\n"):
            lines = lines[:-1]  # as getline: no empty line after the last newline
        for line in lines:
            doc += line + b"\n"
            if line == b"%":  # the end of a fortune
                if len(doc) > 2:
                    docs.append(doc)
                doc = b""
        if doc:
            docs.append(doc + b"%\n")
    train = b"".join(d for i, d in enumerate(docs) if i % held_out_every != held_out_every - 1)
    held = b"".join(d for i, d in enumerate(docs) if i % held_out_every == held_out_every - 1)
    return torch.frombuffer(bytearray(train), dtype=torch.uint8).long(), torch.frombuffer(bytearray(held), dtype=torch.uint8).long()


def batch(data, B, T, gen, device):
    starts = torch.randint(0, data.numel() - T, (B,), generator=gen)
    x = torch.stack([data[s:s + T] for s in starts])
    y = torch.stack([data[s + 1:s + 1 + T] for s in starts])
    return x.to(device), y.to(device)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--init", default="")
    for name in ("layers", "width", "heads", "context", "batch-size", "steps", "warmup", "eval-every"):
        ap.add_argument("--" + name, type=int, default=-1)
    ap.add_argument("--eval-batches", type=int, default=20)
    ap.add_argument("--lr", type=float, default=-1)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--max-minutes", type=float, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", default="/usr/share/games/fortunes")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--tf32", action="store_true", help="fp32 matmuls on tf32 tensor cores (train-gpt's --tf32)")
    ap.add_argument("--amp", choices=["bf16", "f16"], default=None, help="autocast (f16 with a GradScaler)")
    ap.add_argument("--profile", action="store_true",
                    help="profile 5 steps after 3 warm-up steps and print the top ops by GPU (or CPU) time")
    a = ap.parse_args()
    gpu = a.device.startswith("cuda")
    defaults = dict(layers=(4, 6), width=(128, 384), heads=(4, 6), context=(64, 256), batch_size=(16, 64),
                    steps=(1500, 5000), warmup=(100, 100), eval_every=(250, 250))
    for k, (cpu_v, gpu_v) in defaults.items():
        if getattr(a, k) < 0:
            setattr(a, k, gpu_v if gpu else cpu_v)
    if a.lr < 0:
        a.lr = 1e-3 if gpu else 2e-3
    min_lr = a.lr / 10
    torch.set_num_threads(a.threads)
    if a.tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    amp_dtype = {"bf16": torch.bfloat16, "f16": torch.float16}.get(a.amp)
    scaler = torch.amp.GradScaler(enabled=a.amp == "f16")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        import torch.distributed as dist
        if gpu:
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
            a.device = f"cuda:{torch.cuda.current_device()}"
        dist.init_process_group("nccl" if gpu else "gloo")
        if a.batch_size % world:
            raise SystemExit(f"--batch-size {a.batch_size} is not a multiple of the {world} ranks")
    local_batch = a.batch_size // world
    torch.manual_seed(a.seed)
    train, held = fortunes(a.corpus)
    model = GPT(256, a.context, a.layers, a.heads, a.width).to(a.device)
    if a.init:
        from safetensors.torch import load_file
        # train-gpt's checkpoints also hold the resume state (optimizer., grad_scaler., rng. keys).
        state = {k: v for k, v in load_file(a.init, device=a.device).items()
                 if not k.startswith(("optimizer.", "grad_scaler.", "rng."))}
        model.load_state_dict(state, strict=True)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.99), eps=1e-8)
    ddp = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    step_fn = torch.compile(ddp) if a.compile else ddp

    def lr_at(step):
        if step < a.warmup:
            return a.lr * (step + 1) / a.warmup
        if a.steps <= a.warmup:
            return a.lr
        progress = min(1.0, (step - a.warmup) / max(1, a.steps - a.warmup))
        return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (a.lr - min_lr)

    def evaluate():
        model.eval()
        g = torch.Generator().manual_seed(a.seed + 1000003)
        with torch.no_grad():
            s = sum(model(*batch(held, a.batch_size, a.context, g, a.device)).item() for _ in range(a.eval_batches))
        model.train()
        return s / a.eval_batches

    sync = torch.cuda.synchronize if gpu else (lambda: None)
    say = print if rank == 0 else (lambda *args, **kw: None)
    say(f"torch {torch.__version__}, {a.threads} threads, {a.layers} layers, width {a.width}, {a.heads} heads, "
        f"context {a.context}, batch {a.batch_size}, {a.device}{', compiled' if a.compile else ''}"
        f"{f', DDP over {world} ranks' if world > 1 else ''}", flush=True)
    gen = torch.Generator().manual_seed(a.seed + 1 + 7919 * rank)
    ema, tokens, train_s, t0 = 0.0, 0, 0.0, time.perf_counter()
    steady_tokens, steady_s = 0, 0.0
    done = 0
    for step in range(a.steps):
        if a.max_minutes and time.perf_counter() - t0 > 60 * a.max_minutes:
            print(f"stopping after {(time.perf_counter() - t0) / 60:.1f} minutes (--max-minutes)")
            break
        done = step + 1
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x, y = batch(train, local_batch, a.context, gen, a.device)
        sync()
        s0 = time.perf_counter()
        if a.profile and step == 3:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU] +
                                          ([torch.profiler.ProfilerActivity.CUDA] if gpu else []))
            prof.__enter__()
        with torch.autocast(device_type="cuda" if gpu else "cpu", dtype=amp_dtype or torch.bfloat16,
                            enabled=amp_dtype is not None):
            loss = step_fn(x, y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        value = loss.item()
        if a.profile and step == 7:
            prof.__exit__(None, None, None)
            print(prof.key_averages().table(sort_by="cuda_time_total" if gpu else "cpu_time_total", row_limit=25))
        train_s += time.perf_counter() - s0
        tokens += a.batch_size * a.context
        if step >= 10:
            steady_s += time.perf_counter() - s0
            steady_tokens += a.batch_size * a.context
        ema = value if step == 0 else 0.95 * ema + 0.05 * value
        if (step + 1) % a.eval_every == 0 or step + 1 == a.steps:
            held_out = evaluate()  # every rank evaluates (the same batches), rank 0 prints
            say(f"step {step + 1}: train loss {ema:.4f}, held-out loss {held_out:.4f}, "
                f"{time.perf_counter() - t0:.1f} s, {tokens / train_s:.0f} tokens/s", flush=True)
    if done % a.eval_every != 0 and done != a.steps:
        held_out = evaluate()
        say(f"step {done}: train loss {ema:.4f}, held-out loss {held_out:.4f}, "
            f"{time.perf_counter() - t0:.1f} s, {tokens / max(train_s, 1e-9):.0f} tokens/s", flush=True)
    if steady_s > 0:
        say(f"steady: {steady_tokens / steady_s:.0f} tokens/s over steps 11-{done}", flush=True)
    if world > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
