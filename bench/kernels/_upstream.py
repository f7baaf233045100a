"""The original Triton kernels of the real-world suite, loaded from their upstream source files.

The kernels the suite ports (kernels/<name>.cpp) are timed beside the originals under Triton. The
originals are other projects' code and are not copied into this repository: each
bench/kernels/<name>.py names its upstream files (repository, path, commit), and this module loads
the definitions it needs from a local copy of them, found under

    $TRITIUM_UPSTREAM/<owner>/<repo>/<path>      (default: bench/kernels/upstream/, git-ignored)

Only the named top-level definitions (functions with their decorators, classes, assignments) are
executed, in file order, in a namespace that provides torch, triton, triton.language as tl and
whatever stand-ins the caller passes (e.g. FlagGems' runtime helpers); the file's imports and its
top-level test and benchmark code are skipped. The code keeps its file name and line numbers, so
@triton.jit reads each kernel's source from the upstream file itself.
"""
import ast
import os
import types
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(os.environ.get("TRITIUM_UPSTREAM", Path(__file__).resolve().parent / "upstream"))


class MissingUpstream(RuntimeError):
    pass


def path_of(repo, path):
    return ROOT / repo / path


def require(files):
    """files: [(repo, path, commit)]. Raises MissingUpstream naming every file that is absent."""
    missing = [f"{repo} {path} @ {commit} -> {path_of(repo, path)}" for repo, path, commit in files
               if not path_of(repo, path).is_file()]
    if missing:
        raise MissingUpstream("upstream sources missing (copy them there, or set TRITIUM_UPSTREAM):\n  " +
                              "\n  ".join(missing))


def _names_of(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def load(repo, path, names, namespace=None, patch=None, block=None):
    """Executes the top-level definitions `names` of the upstream file in `namespace` (a dict,
    created with torch / triton / tl when None) and returns the namespace. `patch(source)` may
    rewrite the source first (an API the file uses that the installed Triton spells differently);
    patched kernels then read their source from the rewritten text, kept beside the original.
    `block(module)` may pick the statement list that holds the definitions instead of the
    module's body (bitsandbytes defines its kernels in the `else:` of a top-level
    `if not is_triton_available():`); they keep their indentation and line numbers."""
    file = path_of(repo, path)
    source = file.read_text()
    if patch is not None:
        patched = patch(source)
        if patched != source:
            file = file.with_name(file.name + ".patched.py")
            file.write_text(patched)
            source = patched
    tree = ast.parse(source, filename=str(file))
    wanted = set(names)
    statements = tree.body if block is None else block(tree)
    body = [node for node in statements if _names_of(node) & wanted]
    found = set().union(*(_names_of(node) for node in body)) if body else set()
    if wanted - found:
        raise MissingUpstream(f"{file}: no top-level definition of {sorted(wanted - found)}")
    ns = namespace if namespace is not None else {}
    ns.setdefault("torch", torch)
    ns.setdefault("triton", triton)
    ns.setdefault("tl", tl)
    ns.setdefault("__name__", f"upstream.{Path(path).stem.replace('-', '_')}")
    exec(compile(ast.Module(body=body, type_ignores=[]), str(file), "exec"), ns)
    return ns


def module(name, ns, names):
    """A module object holding ns[names] (jit functions reached as `mod.fn` from a kernel must be
    attributes of a module, not of a plain object)."""
    m = types.ModuleType(name)
    for n in names:
        setattr(m, n, ns[n])
    return m


def tflops(flops, ms):
    return flops * 1e-12 / (ms * 1e-3)
