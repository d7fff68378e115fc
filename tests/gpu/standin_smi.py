#!/usr/bin/python3 -S
"""A stand-in nvidia-smi for make gpu-report's tests: STANDIN_GPUS GPUs (default 1)
named "Stand-in H100", all joined by NVLink (topo -m: NV18), driver 1.2.3, CUDA 99.9.
memory.used is 5 MiB plus what stand-in programs say they hold: the numbers in the
files $STANDIN_GPU_DIR/gpuI.* (tests/gpu/standin_train.py writes them).
  nvidia-smi [--query-gpu=F,G --format=csv,noheader,nounits | topo -m | -L]"""

import glob
import os
import sys

G = int(os.environ.get("STANDIN_GPUS", "1"))


def used(i):
    total = 5.0
    for path in glob.glob(os.path.join(os.environ.get("STANDIN_GPU_DIR", "/nonexistent"), f"gpu{i}.*")):
        try:
            with open(path) as f:
                total += float(f.read().strip() or 0)
        except (OSError, ValueError):
            pass
    return total


def field(name, i):
    return {"index": str(i), "uuid": f"GPU-{i:08d}-5a5a-4b4b-8c8c-00000000000{i % 10}",
            "name": "Stand-in H100", "memory.total": "81559", "memory.used": f"{used(i):.0f}",
            "clocks.max.sm": "1980", "clocks.max.memory": "2619", "driver_version": "1.2.3"}.get(name, "[N/A]")


args = sys.argv[1:]
if G == 0:
    print("No devices were found")
    sys.exit(6)
if args[:1] == ["topo"]:
    cols = [f"GPU{i}" for i in range(G)]
    print("\t" + "\t".join(cols) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID")
    for i in range(G):
        print(f"GPU{i}\t" + "\t".join(" X " if j == i else "NV18" for j in range(G)) + "\t0-15\t0\t\tN/A")
    print("\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks")
elif args[:1] == ["-L"]:
    for i in range(G):
        print(f"GPU {i}: Stand-in H100 (UUID: {field('uuid', i)})")
elif args and args[0].startswith("--query-gpu="):
    names = args[0].split("=", 1)[1].split(",")
    for i in range(G):
        print(", ".join(field(n.strip(), i) for n in names))
else:
    print("| NVIDIA-SMI 1.2.3   Driver Version: 1.2.3   CUDA Version: 99.9 |")
