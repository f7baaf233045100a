"""Liger-Kernel's cross-entropy loss beside kernels/cross_entropy.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/cross_entropy.py at ead96b618e5c:
LOG2_E, liger_cross_entropy_kernel, cross_entropy_forward and cross_entropy_backward, with
element_mul_kernel from src/liger_kernel/ops/utils.py. The file picks `tanh` and MAX_FUSED_SIZE in
top-level `if`s (on the Triton version and infer_device()), which cannot be loaded by name: they are
given as the CUDA branches set them (libdevice.tanh, 65536 // 2). check() runs the forward and the
in-place backward against float64 (ignore_index rows, class weights, label smoothing, z-loss,
softcapping, token accuracy and predicted tokens, mean / sum / none, f32, bf16 and f16); bench()
times the forward (which writes the gradient in place; the backward with grad_output 1 does
nothing) on benchmark_cross_entropy.py's default model vocabulary (llama_3_8b, V = 128256, fp32
logits that require grad, random targets, mean) over the BT sweep, GB/s from the bytes the kernel
moves (the logits read twice and written once).
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402
import _upstream  # noqa: E402

NAME = "cross_entropy"
UPSTREAM = [_liger.ops_file("cross_entropy"), (_liger.REPO, _liger.UTILS, _liger.COMMIT)]


def _original():
    from triton.language.extra import libdevice
    ns = _liger.namespace()
    _upstream.load(_liger.REPO, _liger.UTILS, ["element_mul_kernel"], namespace=ns)
    ns.update(tanh=libdevice.tanh, MAX_FUSED_SIZE=65536 // 2)
    repo, path, _ = UPSTREAM[0]
    _upstream.require(UPSTREAM)
    return _upstream.load(repo, path, ["LOG2_E", "liger_cross_entropy_kernel", "cross_entropy_forward",
                                       "cross_entropy_backward"], namespace=ns)


def _reference(x, target, weight, ignore_index, lss, ls, reduction, softcap):
    """Loss, z-loss, per-row argmax and the gradient by the definitions (float64, autograd)."""
    x = x.double().detach().requires_grad_(True)
    z = softcap * torch.tanh(x / softcap) if softcap else x
    keep = target != ignore_index
    t = torch.where(keep, target, 0)
    lse = torch.logsumexp(z, -1)
    V = x.shape[1]
    w = weight.double() if weight is not None else torch.ones(V, dtype=torch.float64, device=x.device)
    wy = w[t]
    loss = wy * (lse - z.gather(1, t[:, None])[:, 0])
    if ls > 0:
        smooth = -(ls / V) * (z * w).sum(-1) + ((ls / V) * lse * w.sum() if weight is not None else ls * lse)
        loss = loss * (1 - ls) + smooth
    zl = lss * lse * lse
    if reduction == "mean":
        n = keep.sum()
        loss = loss / ((wy * keep).sum() if weight is not None else n)
        zl = zl / n
    loss, zl = (loss + zl) * keep, zl * keep
    total = loss if reduction == "none" else loss.sum()
    grad, = torch.autograd.grad(total, x, torch.ones_like(total))
    argmax = torch.where(keep, z.argmax(-1), -1)
    return total.detach(), (zl if reduction == "none" else zl.sum()).detach(), argmax, grad


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    cases = [(6, 40000, torch.float32, "mean", False, 0.0, 0.0, None),
             (9, 700, torch.float32, "mean", False, 0.1, 1e-4, 30.0),
             (9, 700, torch.float32, "mean", True, 0.1, 1e-4, None),
             (7, 1100, torch.bfloat16, "none", False, 0.0, 0.0, None),
             (8, 900, torch.float16, "sum", True, 0.05, 0.0, 20.0)]
    for BT, V, dtype, reduction, weighted, ls, lss, softcap in cases:
        x = (torch.randn(BT, V, device="cuda") * 2).to(dtype)
        target = torch.randint(0, V, (BT,), device="cuda")
        target[1::4] = -100
        weight = torch.rand(V, device="cuda") * 1.8 + 0.2 if weighted else None
        ref_loss, ref_z, ref_arg, ref_grad = _reference(x, target, weight, -100, lss, ls, reduction, softcap)
        x.requires_grad_(True)
        loss, z_loss, _, predicted, grad = ns["cross_entropy_forward"](x, target, weight, -100, lss, ls, reduction,
                                                                       softcap, True, False, True)
        grad_output = torch.rand(BT, device="cuda") + 0.5 if reduction == "none" else torch.tensor(0.5, device="cuda")
        grad = ns["cross_entropy_backward"](grad, grad_output)
        ref_grad = ref_grad * (grad_output[:, None] if reduction == "none" else grad_output)
        bound = {torch.bfloat16: 1e-2, torch.float16: 1e-3}.get(dtype, 1e-5)
        for what, got, want in (("loss", loss, ref_loss), ("z_loss", z_loss, ref_z), ("grad", grad, ref_grad)):
            rel = ((got.double() - want).norm() / want.norm().clamp_min(1e-30)).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {BT}x{V} {dtype} {reduction} weight={weighted} smoothing={ls} lss={lss} "
                  f"softcap={softcap}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
            ok = ok and good
        same = bool((predicted == ref_arg).all())
        print(f"{NAME} (Triton) predicted tokens {BT}x{V} {dtype}: {'OK' if same else 'FAILED'}")
        ok = ok and same
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    V = 128256
    for BT in (1024, 2048, 4096, 8192):
        x = torch.randn(BT, V, device="cuda", requires_grad=True)
        target = torch.randint(V, (BT,), device="cuda")
        nbytes = 3 * BT * V * 4
        ms = triton.testing.do_bench(
            lambda: ns["cross_entropy_forward"](x, target, None, -100, 0.0, 0.0, "mean", None, False, False, False),
            return_mode="median")
        rows.append({"shape": f"fwd+grad BT={BT} V={V} f32 mean", "ms": ms, "rate": _liger.gbps(nbytes, ms), "unit": "GB/s"})
        del x
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
