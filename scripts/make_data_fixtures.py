#!/usr/bin/env python3
"""Prints the DistributedSampler cases of tests/test_data.cpp (distributed_sampler_matches_pytorch):
for each (n, num_replicas, drop_last), the indices torch.utils.data.DistributedSampler gives every
rank with shuffle=False. Run with the PyTorch venv (never a build or test dependency):
    /work/.torchvenv/bin/python scripts/make_data_fixtures.py
and paste the lines into the test's `cases`."""
from torch.utils.data import DistributedSampler


def main():
    for n in (10, 7, 2, 12):
        for replicas in (3, 4, 5):
            for drop_last in (False, True):
                data = list(range(n))
                per_rank = [list(DistributedSampler(data, num_replicas=replicas, rank=r, shuffle=False,
                                                    drop_last=drop_last)) for r in range(replicas)]
                ranks = ", ".join("{" + ", ".join(map(str, p)) + "}" for p in per_rank)
                print("    {%d, %d, %s, {%s}}," % (n, replicas, "true" if drop_last else "false", ranks))


if __name__ == "__main__":
    main()
