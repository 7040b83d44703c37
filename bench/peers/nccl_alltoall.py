#!/usr/bin/env python3
"""NCCL all-to-all through torch.distributed: the comparison of te4j-bench --mode alltoall.

One process per GPU, started by te4j-bench --peers (or by torchrun) with RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR and MASTER_PORT set; LOCAL_RANK picks the GPU. For each block size on the
command line (bytes each rank sends to each other rank; 4K, 1M, 1G suffixes allowed) every rank
runs dist.all_to_all_single on a uint8 tensor of N x size bytes, and rank 0 prints one line:

    nccl-a2a| N=<ranks> size=<bytes> us=<median time of one all-to-all> gbps=<per GPU>

GB/s per GPU = (N-1) x size / time, 1e9 B/s (what te4j-bench reports). Each sample is shaped like
te4j-bench's: a barrier, then --loop all-to-alls (default 1) timed with CUDA events; the slowest
rank's time counts (an all-to-all ends when every rank has its blocks).
"""
import os

# NVLink multicast (NVLS) can take a shared host's GPUs down: off before torch and NCCL load.
os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"

import argparse
import statistics
import sys

import torch
import torch.distributed as dist

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text):
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = UNITS.get(t[-1:], 1)
    digits = t[:-1] if t[-1:] in UNITS else t
    if not digits.isdigit() or int(digits) <= 0:
        raise argparse.ArgumentTypeError(f"bad size '{text}' (examples: 4096, 4K, 1M)")
    return int(digits) * unit


def arguments():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sizes", nargs="+", type=parse_size, help="block sizes per destination")
    p.add_argument("--warmup", type=int, default=2, help="untimed all-to-alls per size")
    p.add_argument("--samples", type=int, default=20, help="timed samples per size")
    p.add_argument("--loop", type=int, default=1, help="back-to-back all-to-alls per sample")
    return p.parse_args()


def fill_blocks(send, rank, world, size):
    """Block d of rank r holds the byte (31 r + d + 1) mod 256: each arrival's sender and slot show."""
    for d in range(world):
        send[d * size:(d + 1) * size].fill_((31 * rank + d + 1) % 256)


def check_blocks(recv, rank, world, size):
    """Slot s must hold what rank s put in its block for this rank; returns the first wrong slot or None."""
    for s in range(world):
        want = (31 * s + rank + 1) % 256
        block = recv[s * size:(s + 1) * size]
        if not bool((block == want).all()):
            return s
    return None


def main():
    args = arguments()
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    try:
        for size in args.sizes:
            send = torch.empty(world * size, dtype=torch.uint8, device="cuda")
            recv = torch.empty(world * size, dtype=torch.uint8, device="cuda")
            fill_blocks(send, rank, world, size)
            recv.fill_(0xA5)
            for _ in range(max(1, args.warmup)):
                dist.all_to_all_single(recv, send)
            torch.cuda.synchronize()
            wrong = check_blocks(recv, rank, world, size)
            if wrong is not None:
                print(f"nccl-a2a| error rank {rank}: block from rank {wrong} is wrong (size {size})", flush=True)
                return 1
            loop = max(1, args.loop)
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            per_op_us = []
            for _ in range(max(1, args.samples)):
                dist.barrier()
                start.record()
                for _ in range(loop):
                    dist.all_to_all_single(recv, send)
                stop.record()
                torch.cuda.synchronize()
                mine = torch.tensor([start.elapsed_time(stop) * 1000.0 / loop], dtype=torch.float64, device="cuda")
                dist.all_reduce(mine, op=dist.ReduceOp.MAX)
                per_op_us.append(mine.item())
            us = statistics.median(per_op_us)
            if rank == 0:
                gbps = (world - 1) * size / (us * 1000.0)
                print(f"nccl-a2a| N={world} size={size} us={us:.3f} gbps={gbps:.3f}", flush=True)
            del send, recv
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
