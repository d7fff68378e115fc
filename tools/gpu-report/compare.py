"""The comparisons of make gpu-report's multi-GPU items, on the lessons' real output
(their --metrics JSON lines and the lines they print): pure functions, tested with the
programs on CPU ranks (tests/gpu/test_gpu_report_multi.py) as well as with stand-ins.

Tolerances: the per-step losses of a split run against one rank's, 1e-5 relative (what
lessons 07 and 09 meet on CPU ranks, tests/dist/run.sh and lesson09.sh: the same
batch's gradient summed in another order); lesson 06's epoch means the same; digests
bit for bit (ZeRO's stages take the steps of plain data parallel exactly)."""

import json
import math
import re

SAME_LOSSES = 1e-5


def rows(path):
    """The JSON lines of a --metrics file ([] when it is missing)."""
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip().startswith("{")]
    except OSError:
        return []


def step_losses(path):
    """The per-step losses of a --metrics file: the lines with a step number."""
    return [r["loss"] for r in rows(path) if "step" in r and "loss" in r]


def worst_relative(ref, got):
    """The largest |got - ref| / |ref| over the pairs, or None when the lengths differ or
    there is nothing to compare (or a value is not finite)."""
    if not ref or len(ref) != len(got):
        return None
    worst = 0.0
    for a, b in zip(ref, got):
        if not (math.isfinite(a) and math.isfinite(b)):
            return None
        worst = max(worst, abs(b - a) / abs(a) if a else abs(b))
    return worst


def same_losses(ref, got, tol=SAME_LOSSES):
    """(passed, what was seen) for two lists of losses that should agree to tol."""
    w = worst_relative(ref, got)
    if w is None:
        return False, f"{len(got)} losses against {len(ref)}: nothing to compare" if len(got) != len(ref) or not ref \
            else "a loss is not finite"
    exact = " (bit for bit)" if w == 0 else ""
    return w <= tol, f"{len(ref)} losses, largest difference {w:.2g} relative{exact} (at most {tol:g})"


# not anchored to a line: under mpirun one rank's line may land in the middle of another's
DIGEST = re.compile(r"(?<![0-9])rank (\d+) (parameter|optimizer) digest: ([0-9a-f]{16})")


def digests(text):
    """{kind: {rank: digest}} of the "rank R parameter digest: ..." lines."""
    out = {}
    for rank, kind, d in DIGEST.findall(text):
        out.setdefault(kind, {})[int(rank)] = d
    return out


def one_digest(text, ranks, kinds=("parameter",)):
    """(digest per kind, or None with why) when every one of `ranks` ranks printed the
    same digest of each kind."""
    d = digests(text)
    got = {}
    for kind in kinds:
        per = d.get(kind, {})
        if sorted(per) != list(range(ranks)):
            return None, f"{len(per)} of {ranks} ranks printed a {kind} digest"
        if len(set(per.values())) != 1:
            return None, f"the ranks' {kind} digests differ: {', '.join(f'{r} {v}' for r, v in sorted(per.items()))}"
        got[kind] = next(iter(per.values()))
    return got, None


def efficiency(rate_n, rate_1, n):
    """Strong scaling with the same global batch: rate on n ranks over n times the rate
    on one (1.0: n ranks take 1/n of the time)."""
    return rate_n / (n * rate_1) if rate_1 and rate_n else None


def exposed_ms(text):
    """Lesson 06's "communication not hidden: X ms per step" (buckets), or None."""
    m = re.search(r"communication not hidden: ([0-9.]+) ms per step", text)
    return float(m[1]) if m else None


# ---------------------------------------------------------------- lesson 07


def bubble_formula(p, m):
    return (p - 1) / (m + p - 1)


def median(values):
    v = sorted(values)
    if not v:
        return None
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def bubble(path, p, m):
    """The measured bubble of a lesson 07 run (median of the steps' bubble_fraction after
    the first), the formula's, and what the stages' own compute times allow (t_s a
    stage's busy time / m; a step at least sum(t_s) + (m - 1) max(t_s), so the idle share
    1 - mean busy / that): a dict, or None without per-step lines."""
    steps = [r for r in rows(path) if "step" in r and "bubble_fraction" in r]
    later = steps[1:] or steps
    if not later:
        return None
    b = median([r["bubble_fraction"] for r in later])
    uneven = None
    if all("busy_max_seconds" in r and "busy_mean_seconds" in r for r in later):
        def allowed(r):
            least = (p * r["busy_mean_seconds"] + (m - 1) * r["busy_max_seconds"]) / m
            return 1 - r["busy_mean_seconds"] / least if least > 0 else None
        uneven = median([a for a in map(allowed, later) if a is not None])
    return {"measured": b, "formula": bubble_formula(p, m), "uneven": uneven, "steps": len(later)}


STAGE_MEMORY = re.compile(r"^ +stage (\d+) memory: .*?activations ([0-9.]+) MB \((\d+) micro-batch(?:es)? in flight"
                          r".*: ([0-9.]+) MB in all(?:; its GPU has ([0-9.]+) GB in use)?", re.M)


def stage_memory(text):
    """{stage: {"activations_mb", "in_flight", "total_mb", "gpu_in_use_gb"}} of lesson 07's
    "  stage s memory: ..." lines."""
    return {int(s): {"activations_mb": float(a), "in_flight": int(k), "total_mb": float(t),
                     "gpu_in_use_gb": float(g) if g else None}
            for s, a, k, t, g in STAGE_MEMORY.findall(text)}


# ---------------------------------------------------------------- lesson 08

def zero_formula(stage, psi, n, optimizer_bytes):
    """Bytes per rank of ZeRO (Rajbhandari et al.; lesson 08's table) for psi parameters
    on n ranks, float32 values and gradients, optimizer_bytes a parameter (AdamW 8,
    SGD with momentum 4): {"params", "grads", "optim"}; a shard is ceil(psi / n)."""
    shard = -(-psi // n)
    return {"params": 4 * (shard if stage >= 3 else psi),
            "grads": 4 * (shard if stage >= 2 else psi),
            "optim": optimizer_bytes * (shard if stage >= 1 else psi)}


def zero_model(text):
    """(psi, optimizer bytes a parameter) from lesson 08's "model: ..." line, or None."""
    m = re.search(r"^model: .*?, (\d+) parameters in \d+ blocks; stage \d+ on \d+ ranks?, (AdamW|SGD)", text, re.M)
    return (int(m[1]), 8 if m[2] == "AdamW" else 4) if m else None


def zero_memory(path):
    """The last step's {"params", "grads", "optim", "peak"} bytes of a lesson 08 run."""
    steps = [r for r in rows(path) if "step" in r and "param_bytes" in r]
    if not steps:
        return None
    r = steps[-1]
    return {"params": r["param_bytes"], "grads": r["grad_bytes"], "optim": r["optim_bytes"], "peak": r["peak_bytes"]}


def zero_against_formula(got, want, n, optimizer_bytes):
    """(passed, what was seen): each buffer as allocated within a shard's padding of the
    formula (less than one element a rank: (n - 1) elements)."""
    worst, parts = 0, []
    for k, size in (("params", 4), ("grads", 4), ("optim", optimizer_bytes)):
        off = got[k] - want[k]
        worst = max(worst, abs(off) / (size * max(1, n - 1)))
        parts.append(f"{k} {got[k] / 1e6:.3f} MB ({off:+d} B)")
    return worst <= 1, ", ".join(parts) + f" against the formula (padding of at most {n - 1} elements allowed)"


def zero_bytes_sent(text):
    """(MB sent per step by rank 0, the formula's MB) of lesson 08's communication line."""
    m = re.search(r"communication: ([0-9.]+) MB sent per step by rank 0, the formula .*? = ([0-9.]+) MB", text)
    return (float(m[1]), float(m[2])) if m else None


# ---------------------------------------------------------------- NCCL

# (CUDA's minor version one digit: another rank's output glued on is not read as more of it)
NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+(?:\+cuda\d+\.\d(?![\d.]))?)")
# a transport and its kind (P2P/CUMEM, SHM/direct, NET/IB, NET/Socket), not what follows:
# under mpirun another rank's line may be glued to the end of one
NCCL_VIA = re.compile(r"Channel \d+(?:/\d+)? : \d+\[[0-9a-f]+\] -> \d+\[[0-9a-f]+\](?: \[\w+\])? "
                      r"via ((?:P2P|SHM|NET|NVLS|COLLNET|CollNet)(?:/[A-Za-z0-9_]+)?)")
NCCL_TYPE = re.compile(r"Pattern \d+, crossNic \d+, nChannels (\d+),.*?type (\w+)/(\w+)")
NCCL_LINKS = {"NVL": "NVLink", "NVB": "NVLink through another GPU", "PIX": "PCIe, one switch",
              "PXB": "PCIe, several switches", "PXN": "PCIe to a NIC through another GPU",
              "PHB": "PCIe through the CPU", "SYS": "PCIe and the CPUs' link", "NET": "the network",
              "LOC": "the GPU itself", "C2C": "NVLink-C2C"}


def nccl_report(text):
    """What NCCL said of itself (NCCL_DEBUG=INFO): its version, the transports of its
    channels ("P2P/CUMEM/read": 12, ...) and the link types of its graphs ("NVL/PIX")."""
    version = NCCL_VERSION.search(text)
    via = {}
    for t in NCCL_VIA.findall(text):
        via[t] = via.get(t, 0) + 1
    types = sorted({f"{a}/{b}" for _, a, b in NCCL_TYPE.findall(text)})
    return {"version": version[1] if version else None, "transports": via, "link_types": types}


def nccl_path(rep):
    """One phrase for the path NCCL chose, e.g. "P2P/CUMEM (48 connections); its graphs:
    NVLink (NVL/PIX)", or None when its report says nothing."""
    if not rep["transports"] and not rep["link_types"]:
        return None
    t = ", ".join(f"{k} ({v} connection{'s' if v != 1 else ''})" for k, v in
                  sorted(rep["transports"].items(), key=lambda kv: -kv[1]))
    links = ", ".join(f"{NCCL_LINKS.get(x.split('/')[0], x.split('/')[0])} ({x})" for x in rep["link_types"])
    return "; ".join(p for p in (t and f"channels via {t}", links and f"its graphs: {links}") if p)


def bus_factor(collective, n):
    """nccl-tests' factor from algorithm bandwidth to bus bandwidth (doc/PERFORMANCE.md)."""
    return {"all-reduce": 2 * (n - 1) / n, "all-gather": (n - 1) / n,
            "reduce-scatter": (n - 1) / n}.get(collective, 1.0)


def bandwidth_rows(path, collective):
    return sorted((r for r in rows(path) if r.get("collective", "all-reduce") == collective),
                  key=lambda r: r["bytes"])
