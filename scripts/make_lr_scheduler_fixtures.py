#!/usr/bin/env python3
"""Trajectories of torch.optim.lr_scheduler for tests/test_nn_lr_scheduler.cpp.

Each case builds an optimiser with two parameter groups (lr 0.1 and 0.02), a scheduler, steps it
and records get_last_lr() after construction and after every step (and the groups' momentum or
beta1 for OneCycleLR). Written to tests/fixtures/lr_schedulers/trajectories.json with Python's
shortest round-trip floats. Run with the venv's PyTorch (never a build or test dependency):
    /work/.torchvenv/bin/python scripts/make_lr_scheduler_fixtures.py
"""
import json
import os

import torch
from torch.optim import SGD, Adam, lr_scheduler as L


def optimizer(kind):
    a, b = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(3))
    groups = [{"params": [a]}, {"params": [b], "lr": 0.02}]
    if kind == "sgd":
        return SGD(groups, lr=0.1, momentum=0.9)
    return Adam(groups, lr=0.1, betas=(0.9, 0.999))


def momentum_of(opt):
    if "betas" in opt.defaults:
        return [g["betas"][0] for g in opt.param_groups]
    return [g["momentum"] for g in opt.param_groups]


def run(make, steps, kind="sgd", metrics=None, track_momentum=False):
    opt = optimizer(kind)
    sched = make(opt)
    lrs, moms = [list(sched.get_last_lr()) if not metrics else [g["lr"] for g in opt.param_groups]], [momentum_of(opt)]
    for i in range(steps):
        opt.step()
        if metrics:
            sched.step(metrics[i])
        else:
            sched.step()
        lrs.append(list(sched.get_last_lr()))
        moms.append(momentum_of(opt))
    out = {"optimizer": kind, "steps": steps, "lrs": lrs}
    if track_momentum:
        out["momentum"] = moms
    if metrics:
        out["metrics"] = metrics[:steps]
    return out


def plateau_metrics(n):
    # Improves, stalls, improves by less than the threshold, worsens: every branch.
    vals, v = [], 10.0
    for i in range(n):
        if i < 5:
            v -= 1.0
        elif i < 20:
            v -= 1e-6
        elif i < 30:
            v += 0.01
        else:
            v -= 0.5
        vals.append(v)
    return vals


def main():
    cases = {
        "StepLR": run(lambda o: L.StepLR(o, step_size=7, gamma=0.5), 40),
        "MultiStepLR": run(lambda o: L.MultiStepLR(o, milestones=[5, 12, 12, 30], gamma=0.3), 40),
        "ExponentialLR": run(lambda o: L.ExponentialLR(o, gamma=0.93), 40),
        "CosineAnnealingLR": run(lambda o: L.CosineAnnealingLR(o, T_max=10, eta_min=0.001), 50),
        "LinearLR": run(lambda o: L.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=8), 30),
        "OneCycleLR_cos_sgd": run(lambda o: L.OneCycleLR(o, max_lr=[0.5, 0.1], total_steps=60), 60, "sgd",
                                  track_momentum=True),
        "OneCycleLR_linear_three_phase_adam": run(
            lambda o: L.OneCycleLR(o, max_lr=0.3, epochs=5, steps_per_epoch=9, pct_start=0.25,
                                   anneal_strategy="linear", three_phase=True, div_factor=10,
                                   final_div_factor=100, base_momentum=0.8, max_momentum=0.9), 45, "adam",
            track_momentum=True),
        "SequentialLR_warmup_cosine": run(
            lambda o: L.SequentialLR(o, [L.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=5),
                                         L.CosineAnnealingLR(o, T_max=20)], milestones=[5]), 40),
        "SequentialLR_three": run(
            lambda o: L.SequentialLR(o, [L.ExponentialLR(o, gamma=0.9), L.StepLR(o, step_size=4, gamma=0.5),
                                         L.MultiStepLR(o, milestones=[3, 6], gamma=0.1)], milestones=[6, 20]), 35),
        "ReduceLROnPlateau_min_rel": run(
            lambda o: L.ReduceLROnPlateau(o, patience=3, factor=0.5), 40, metrics=plateau_metrics(40)),
        "ReduceLROnPlateau_max_abs_cooldown_min_lr": run(
            lambda o: L.ReduceLROnPlateau(o, mode="max", threshold=0.05, threshold_mode="abs", patience=2,
                                          cooldown=3, factor=0.2, min_lr=[1e-3, 5e-4]),
            40, metrics=[-m for m in plateau_metrics(40)]),
    }
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "lr_schedulers", "trajectories.json")
    with open(path, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
