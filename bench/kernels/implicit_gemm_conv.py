"""implicit_gemm_conv: FlagGems' implicit-GEMM 2-D convolution forward, under Triton.

The original kernel and wrapper, transcribed for the benchmark from flagos-ai/FlagGems
src/flag_gems/ops/conv2d.py (commit 24bf03cd7f4893928e9b032d3bc2be2fd056f209, Apache-2.0), with
the conv2d_forward configs of src/flag_gems/runtime/backend/_nvidia/tune_configs.yaml and the
original autotune key; FlagGems' libentry wrapper is left out (a dispatch cache, not the kernel).
kernels/implicit_gemm_conv.cpp is the Tritium port; bench() prints the shapes its --bench prints.
"""
import math

import torch
import triton
import triton.language as tl

NAME = "implicit_gemm_conv"


def conv2d_output_size(in_size, kernel_size, stride, padding, dilation):
    return (in_size + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1


def _configs():
    rows = [(32, 32, 32, 4, 2), (64, 32, 32, 4, 2), (64, 64, 32, 4, 2), (128, 32, 32, 4, 2), (128, 64, 32, 4, 2),
            (128, 128, 32, 4, 2), (32, 32, 32, 4, 3), (64, 32, 32, 4, 3), (64, 64, 32, 4, 3), (128, 32, 32, 4, 3),
            (128, 64, 32, 4, 3), (128, 128, 32, 4, 3), (128, 256, 32, 8, 3), (256, 128, 32, 8, 3), (256, 64, 32, 4, 4),
            (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 2, 5)]
    return [triton.Config({"BLOCK_NI_HO_WO": m, "BLOCK_CO": co, "BLOCK_CI": ci}, num_warps=w, num_stages=s)
            for m, co, ci, w, s in rows]


@triton.autotune(
    configs=_configs(),
    key=[
        "in_n",
        "weight_c",
        "input_height",
        "input_width",
        "out_c",
        "out_height",
        "out_width",
        "weight_height",
        "weight_width",
        "stride_height",
        "stride_width",
        "padding_height",
        "padding_width",
        "groups",
    ],
)
@triton.jit
def conv2d_forward_kernel(
    input_pointer,
    weight_pointer,
    output_pointer,
    bias_pointer,
    in_n,
    input_height,
    input_width,
    out_c,
    out_height,
    out_width,
    input_n_stride,
    input_c_stride,
    input_height_stride,
    input_width_stride,
    weight_n_stride,
    weight_c_stride,
    weight_height_stride,
    weight_width_stride,
    output_n_stride,
    output_c_stride,
    output_height_stride,
    output_width_stride,
    weight_c: tl.constexpr,
    weight_height: tl.constexpr,
    weight_width: tl.constexpr,
    stride_height: tl.constexpr,
    stride_width: tl.constexpr,
    padding_height: tl.constexpr,
    padding_width: tl.constexpr,
    dilation_height: tl.constexpr,
    dilation_width: tl.constexpr,
    groups: tl.constexpr,
    BLOCK_NI_HO_WO: tl.constexpr,
    BLOCK_CI: tl.constexpr,
    BLOCK_CO: tl.constexpr,
    ACCUM_DTYPE: tl.constexpr,
):
    pid_ni_ho_wo = tl.program_id(0)
    pid_co = tl.program_id(1)
    pid_group = tl.program_id(2)

    # caculate in_n out_height out_weight value in kernel
    ni_ho_wo_offset = pid_ni_ho_wo * BLOCK_NI_HO_WO + tl.arange(0, BLOCK_NI_HO_WO)
    ni_ho_offset = ni_ho_wo_offset // out_width
    in_n_point_value = ni_ho_offset // out_height
    output_height_point_value = ni_ho_offset % out_height
    output_width_point_value = ni_ho_wo_offset % out_width

    # Load the input and weight pointers. input and weight are of shape
    # [in_n, groups, in_c, input_height, input_width] and [groups, out_c, in_c, weight_height, weight_width]
    out_per_group_c = out_c // groups
    output_c_offset = pid_co * BLOCK_CO + tl.arange(0, BLOCK_CO)
    input_pointer += (input_n_stride * in_n_point_value + input_c_stride * pid_group * weight_c)[:, None]
    weight_pointer += (weight_n_stride * output_c_offset + weight_n_stride * pid_group * out_per_group_c)[None, :]

    accum = tl.zeros((BLOCK_NI_HO_WO, BLOCK_CO), dtype=ACCUM_DTYPE)
    BLOCK_CI_COUNT = (weight_c + BLOCK_CI - 1) // BLOCK_CI
    for hwc in range(weight_height * weight_width * BLOCK_CI_COUNT):
        c = (hwc % BLOCK_CI_COUNT) * BLOCK_CI
        hw = hwc // BLOCK_CI_COUNT
        h = hw // weight_width
        w = hw % weight_width

        input_c_offset = c + tl.arange(0, BLOCK_CI)
        input_height_offset = h * dilation_height - padding_height + stride_height * output_height_point_value
        input_width_offset = w * dilation_width - padding_width + stride_width * output_width_point_value

        curr_input_pointer = (
            input_pointer
            + (input_c_stride * input_c_offset)[None, :]
            + (input_height_stride * input_height_offset)[:, None]
            + (input_width_stride * input_width_offset)[:, None]
        )
        curr_weight_pointer = (
            weight_pointer
            + (weight_c_stride * input_c_offset)[:, None]
            + (weight_height_stride * h)
            + (weight_width_stride * w)
        )

        input_mask = (
            (in_n_point_value < in_n)[:, None]
            & (input_c_offset < weight_c)[None, :]
            & (0 <= input_height_offset)[:, None]
            & (input_height_offset < input_height)[:, None]
            & (0 <= input_width_offset)[:, None]
            & (input_width_offset < input_width)[:, None]
        )
        weight_mask = (input_c_offset < weight_c)[:, None] & (output_c_offset < out_per_group_c)[None, :]

        input_block = tl.load(curr_input_pointer, mask=input_mask)
        weight_block = tl.load(curr_weight_pointer, mask=weight_mask)

        accum += tl.dot(input_block, weight_block, allow_tf32=False)
    bias_pointer += (pid_group[None] * out_per_group_c)[None, :] + output_c_offset[None, :]
    mask_bias = (output_c_offset < out_per_group_c)[None, :]
    bias = tl.load(bias_pointer, mask_bias).to(ACCUM_DTYPE)
    accum += bias
    output_pointer += (
        (output_n_stride * in_n_point_value)[:, None]
        + (output_c_stride * (pid_group * out_per_group_c + output_c_offset))[None, :]
        + (output_height_stride * output_height_point_value)[:, None]
        + (output_width_stride * output_width_point_value)[:, None]
    )
    output_mask = (
        (in_n_point_value < in_n)[:, None]
        & (output_c_offset < out_per_group_c)[None, :]
        & (output_height_point_value < out_height)[:, None]
        & (output_width_point_value < out_width)[:, None]
    )

    tl.store(output_pointer, accum, mask=output_mask)


def conv2d_forward(input, weight, bias, stride, padding, dilation, groups):
    """Conv2d.forward: shape checks, channel padding to 16, output size, grid, launch."""
    assert weight.ndim == 4, f"Weights must be 4D, received shape {weight.shape}"
    assert bias is None or bias.ndim == 1, f"Bias must be 1D, received shape {bias.shape}"
    assert input.shape[1] == groups * weight.shape[1], (
        f"Incompatible input ({input.shape}) and weights ({weight.shape}) shape with {groups} groups")
    assert bias is None or weight.shape[0] == bias.shape[0], (
        f"Incompatible weights ({weight.shape}) and bias ({bias.shape}) shape")
    stride_height, stride_width = stride if isinstance(stride, (list, tuple)) else (stride, stride)
    padding_height, padding_width = padding if isinstance(padding, (list, tuple)) else (padding, padding)
    dilation_height, dilation_width = dilation if isinstance(dilation, (list, tuple)) else (dilation, dilation)

    in_n, _, input_height, input_width = input.shape
    out_c, weight_c, weight_height, weight_width = weight.shape

    # Triton tl.dot requires K >= 16: pad input/weight channels to 16.
    _MIN_DOT_K = 16
    if weight_c < _MIN_DOT_K:
        pad_c = _MIN_DOT_K - weight_c
        if groups == 1:
            input = torch.nn.functional.pad(input, (0, 0, 0, 0, 0, pad_c))
        else:
            N, C, H, W = input.shape
            input = input.reshape(N, groups, weight_c, H, W)
            input = torch.nn.functional.pad(input, (0, 0, 0, 0, 0, pad_c))
            input = input.reshape(N, groups * (weight_c + pad_c), H, W)
        weight = torch.nn.functional.pad(weight, (0, 0, 0, 0, 0, pad_c))
        weight_c = weight_c + pad_c

    out_height = conv2d_output_size(input_height, weight_height, stride_height, padding_height, dilation_height)
    out_width = conv2d_output_size(input_width, weight_width, stride_width, padding_width, dilation_width)

    output_dtype = input.dtype
    output = torch.empty((in_n, out_c, out_height, out_width), device=input.device, dtype=output_dtype)
    accum_dtype = tl.float64 if output_dtype == torch.float64 else tl.float32

    grid = lambda META: (
        triton.cdiv(in_n * out_height * out_width, META["BLOCK_NI_HO_WO"]),
        triton.cdiv(int(out_c // groups), META["BLOCK_CO"]),
        groups,
    )
    bias_pointer = torch.zeros(out_c, device=input.device, dtype=output_dtype) if bias is None else bias
    conv2d_forward_kernel[grid](
        input, weight, output, bias_pointer, in_n, input_height, input_width, out_c, out_height, out_width,
        *input.stride(), *weight.stride(), *output.stride(),
        weight_c, weight_height, weight_width, stride_height, stride_width, padding_height, padding_width,
        dilation_height, dilation_width, groups=groups, ACCUM_DTYPE=accum_dtype,
    )
    return output


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if isinstance(padding, str):
        if padding == "same":
            assert stride == 1, "Doesn't support any stride values other than 1 in padding = 'same' mode"
            ih, iw = input.shape[-2], input.shape[-1]
            kernel_size_h, kernel_size_w = weight.shape[-2], weight.shape[-1]
            padding_h = int(math.ceil((stride * (ih - 1) + 1 + dilation * (kernel_size_h - 1) - ih) / 2))
            padding_w = int(math.ceil((stride * (iw - 1) + 1 + dilation * (kernel_size_w - 1) - iw) / 2))
            oh = int((ih + 2 * padding_h - dilation * (kernel_size_h - 1) - 1) / stride + 1)
            ow = int((iw + 2 * padding_w - dilation * (kernel_size_w - 1) - 1) / stride + 1)
            padding = (padding_h, padding_w)
            return conv2d_forward(input, weight, bias, stride, padding, dilation, groups)[..., (oh - ih):, (ow - iw):]
        elif padding == "valid":
            return conv2d_forward(input, weight, bias, stride, 0, dilation, groups)
        else:
            raise ValueError(f"Unsupported padding string: {padding}, only'valild'/'same' are allowed.")
    return conv2d_forward(input, weight, bias, stride, padding, dilation, groups)


# ---- the suite's check and benchmark --------------------------------------------------------------

def check() -> bool:
    torch.manual_seed(0)
    ok = True
    # kernels/implicit_gemm_conv.cpp's CUDA cases:
    # (batch, input_c, input_h, input_w, out_c, kernel_h, kernel_w, stride, padding, dilation, groups, dtype, bias)
    cases = [(16, 32, 24, 24, 24, 3, 3, 2, 1, 1, 1, torch.float32, True),
             (16, 32, 24, 24, 24, 3, 3, 1, "same", 2, 2, torch.float16, False),
             (4, 3, 33, 30, 40, 5, 3, 1, "valid", 1, 1, torch.bfloat16, True),
             (2, 64, 40, 40, 32, 3, 3, 1, 2, 1, 1, torch.float16, True)]
    for n, ci, h, w, co, kh, kw, s, p, d, g, dtype, with_bias in cases:
        x = torch.randn(n, ci, h, w, device="cuda").to(dtype)
        wt = torch.randn(co, ci // g, kh, kw, device="cuda").to(dtype)
        b = torch.randn(co, device="cuda").to(dtype) if with_bias else None
        out = conv2d(x, wt, b, s, p, d, g)
        ref = torch.nn.functional.conv2d(x.double(), wt.double(), None if b is None else b.double(), s, p, d, g)
        rel = ((out.double() - ref).norm() / ref.norm()).item()
        bound = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1e-2}[dtype]
        good = out.shape == ref.shape and rel <= bound and bool(torch.isfinite(out).all())
        print(f"{NAME} (Triton) {n}x{ci}x{h}x{w} k{kh}x{kw} co{co} s{s} p={p} d{d} g{g} {dtype}: rel err {rel:.2e} "
              f"{'OK' if good else 'FAILED'}")
        ok = ok and good
    return ok


def bench() -> list:
    torch.manual_seed(0)
    rows = []
    # FlagGems' Conv2DBenchmark shapes: (batch, input_c, input_h, input_w, out_c, kernel_h, kernel_w, stride, padding, groups)
    for n, ci, h, w, co, kh, kw, s, p, g in [(32, 64, 128, 128, 32, 3, 3, 1, 2, 1), (32, 64, 210, 210, 16, 5, 5, 2, 1, 1),
                                             (16, 32, 24, 24, 24, 3, 3, 2, 2, 2)]:
        x = torch.randn(n, ci, h, w, device="cuda").to(torch.float16)
        wt = torch.randn(co, ci // g, kh, kw, device="cuda").to(torch.float16)
        out = conv2d(x, wt, None, s, p, 1, g)
        ms = triton.testing.do_bench(lambda: conv2d(x, wt, None, s, p, 1, g), return_mode="median")
        flops = 2.0 * out.numel() * (ci // g) * kh * kw
        rows.append({"shape": f"N={n} C={ci} H={h} W={w} K={co} R={kh} S={kw} stride={s} pad={p} groups={g} f16",
                     "ms": ms, "rate": flops * 1e-12 / (ms * 1e-3), "unit": "TFLOP/s"})
    return rows
