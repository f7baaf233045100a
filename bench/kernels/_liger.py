"""Liger-Kernel's helpers for the suite's Liger originals (bench/kernels/<name>.py).

The kernels in linkedin/Liger-Kernel src/liger_kernel/ops/*.py import their launch helpers from
liger_kernel.ops.utils and liger_kernel.utils. namespace() loads the helpers from the upstream
utils.py itself (calculate_settings, ensure_contiguous, device_context, is_hip) through
_upstream.load, and adds a stand-in for infer_device_arch (the device family; the original caches
a longer table), so the kernels' modules run without installing Liger.
"""
import contextlib
import functools
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

REPO = "linkedin/Liger-Kernel"
COMMIT = "ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c"
UTILS = "src/liger_kernel/ops/utils.py"


def ops_file(name):
    """(repo, path, commit) of src/liger_kernel/ops/<name>.py."""
    return (REPO, f"src/liger_kernel/ops/{name}.py", COMMIT)


def infer_device_arch(device_id=0):
    """The NVIDIA families Liger's kernels branch on (a stand-in for liger_kernel.utils')."""
    major, _ = torch.cuda.get_device_capability(device_id)
    return {7: "volta_turing", 8: "ampere_ada", 9: "hopper", 10: "blackwell"}.get(major, f"sm_{major}")


def infer_device():
    return "cuda"


def namespace():
    """A namespace for _upstream.load holding the helpers Liger's ops import."""
    ns = {"functools": functools, "contextmanager": contextlib.contextmanager}
    _upstream.require([(REPO, UTILS, COMMIT)])
    _upstream.load(REPO, UTILS, ["is_hip", "device_context", "ensure_contiguous", "calculate_settings",
                                 "torch_to_triton_dtype"], namespace=ns)
    ns["infer_device_arch"] = infer_device_arch
    ns["infer_device"] = infer_device
    return ns


def load(name, names, extra=None):
    """Executes `names` of src/liger_kernel/ops/<name>.py over the helpers' namespace."""
    ns = namespace()
    ns.update(extra or {})
    repo, path, commit = ops_file(name)
    _upstream.require([(repo, path, commit)])
    return _upstream.load(repo, path, names, namespace=ns)


def gbps(nbytes, ms):
    return nbytes * 1e-9 / (ms * 1e-3)
