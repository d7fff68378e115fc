"""What nvidia-smi says about a node's GPUs, for make gpu-report: how many the items may
use (nvidia-smi's list, narrowed by CUDA_VISIBLE_DEVICES as Slurm sets it), how they are
connected (nvidia-smi topo -m), and how much memory each has in use while a run goes
(sampled, to hold a program's own count of its memory against the driver's)."""

import os
import re
import shutil
import subprocess
import threading


def output_of(words, timeout=30):
    """stdout of a command, or None when it cannot run or fails."""
    try:
        r = subprocess.run(words, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def listing(fields):
    """nvidia-smi --query-gpu=FIELDS as rows of stripped strings ([] without a GPU)."""
    if not shutil.which("nvidia-smi"):
        return []
    text = output_of(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"])
    return [[f.strip() for f in line.split(",")] for line in (text or "").splitlines() if line.strip()]


def visible(gpus, cvd):
    """The rows of gpus ([index, uuid, ...]) a process may use under CUDA_VISIBLE_DEVICES
    = cvd (None: unset, all of them), in CUDA's order: the entries as listed, by index or
    by UUID (or a unique prefix of one, as CUDA takes it); CUDA stops at the first entry
    that names no GPU. An empty value hides every GPU."""
    if cvd is None:
        return list(gpus)
    out = []
    for entry in (e.strip() for e in cvd.split(",")):
        match = [g for g in gpus if entry and (g[0] == entry or (entry.startswith("GPU-") and g[1].startswith(entry)))]
        if len(match) != 1 or match[0] in out:
            break
        out.append(match[0])
    return out


def count():
    """(GPUs this process may use, the rows [index, uuid, name, memory MiB] of them)."""
    rows = visible(listing("index,uuid,name,memory.total"), os.environ.get("CUDA_VISIBLE_DEVICES"))
    return len(rows), rows


LINKS = {"NV": "NVLink", "PIX": "PCIe, one switch", "PXB": "PCIe, several switches",
         "PHB": "PCIe through the CPU's host bridge", "NODE": "PCIe across a CPU's host bridges",
         "SYS": "PCIe and the link between CPU sockets", "X": "itself"}


def topology(rows):
    """How GPU 0 reaches the others of rows (the visible ones), from nvidia-smi topo -m:
    "NVLink (NV18) between every pair" or "GPU0-GPU1: PCIe, one switch (PIX); ...", or
    None where nvidia-smi has no matrix."""
    text = output_of(["nvidia-smi", "topo", "-m"]) if shutil.which("nvidia-smi") else None
    if not text or len(rows) < 2:
        return None
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in text.splitlines()]
    # the header names the columns GPU0 GPU1 ...; the rows begin GPU0 X ...
    header = next((w for w in map(str.split, lines) if len(w) > 1 and re.fullmatch(r"GPU\d+", w[0])
                   and re.fullmatch(r"GPU\d+", w[1])), None)
    if not header:
        return None
    cols = [c for c in header if re.fullmatch(r"GPU\d+", c)]
    matrix = {}
    for line in lines:
        words = line.split()
        if words and re.fullmatch(r"GPU\d+", words[0]) and len(words) > len(cols):
            matrix[words[0]] = dict(zip(cols, words[1:len(cols) + 1]))
    names = [f"GPU{r[0]}" for r in rows]
    pairs = [(a, b, matrix.get(a, {}).get(b)) for i, a in enumerate(names) for b in names[i + 1:]]
    if not pairs or any(p[2] is None for p in pairs):
        return None

    def said(link):
        kind = "NV" if link.startswith("NV") else link
        return f"{LINKS.get(kind, link)} ({link})"
    kinds = {p[2] for p in pairs}
    if len(kinds) == 1:
        return f"{said(kinds.pop())} between every pair of the {len(names)} GPUs"
    return "; ".join(f"{a}-{b}: {said(link)}" for a, b, link in pairs)


class MemorySampler:
    """nvidia-smi's memory.used of every GPU of the node, every `period` seconds while a
    run goes: peak(index) - base(index) is what the run added on that GPU (MiB)."""

    def __init__(self, period=None):
        period = period or float(os.environ.get("GPU_REPORT_SMI_PERIOD_S") or 0.5)
        self.period, self.base, self.peaks = period, {}, {}
        self._stop = threading.Event()
        self._thread = None

    def _sample(self):
        return {r[0]: float(r[1]) for r in listing("index,memory.used") if len(r) > 1 and _number(r[1])}

    def __enter__(self):
        self.base = self._sample()
        self.peaks = dict(self.base)
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self):
        while not self._stop.wait(self.period):
            for k, v in self._sample().items():
                self.peaks[k] = max(v, self.peaks.get(k, v))

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False

    def added_mib(self):
        """{index: MiB added at the peak over the base}, for the GPUs nvidia-smi listed."""
        return {k: self.peaks[k] - self.base.get(k, 0.0) for k in self.peaks}


def _number(s):
    try:
        float(s)
        return True
    except ValueError:
        return False

