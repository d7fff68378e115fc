"""How make gpu-report's multi-GPU items start their ranks: `srun` inside a Slurm
allocation, `mpirun` otherwise, one rank per GPU, and a run's output and seconds.

The report chooses (gpu-report.py: where()) and tells its items through the environment:
  GPU_REPORT_LAUNCHER      srun or mpirun
  GPU_REPORT_NODES         nodes of the allocation the items may span (srun; default 1)
  GPU_REPORT_SRUN_OPTIONS  more srun words, shell-quoted (slurm/gpu-check.sbatch: the
                           site's SITE_SRUN_OPTIONS and its container's options)
Under srun, GPU ranks meet through NCCL at MASTER_ADDR:MASTER_PORT (the first node of the
allocation, a fresh port for every run), as the lessons' sbatch scripts start them
(job_launcher nompi); CPU ranks (--device cpu: the report's --cpu-ranks mode) through
MPI (--mpi=pmix). --kill-on-bad-exit: a rank that dies ends the step."""

import os
import random
import shlex
import subprocess
import time

OMPI_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


class Launcher:
    def __init__(self, device="cuda", env=None):
        env = os.environ if env is None else env
        self.kind = env.get("GPU_REPORT_LAUNCHER") or ("srun" if env.get("SLURM_JOB_ID") else "mpirun")
        self.nodes = max(1, int(env.get("GPU_REPORT_NODES") or 1))
        self.device = device
        self.extra = [w for w in shlex.split(env.get("GPU_REPORT_SRUN_OPTIONS", "")) if w]
        self.cpus = env.get("SLURM_CPUS_PER_TASK") or "1"
        self.master = None
        if self.kind == "srun":
            hosts = _output(["scontrol", "show", "hostnames", env.get("SLURM_JOB_NODELIST", "")])
            self.master = (hosts.split() or [None])[0] if hosts else None
            self.master = self.master or _output(["hostname", "-s"]).strip() or "localhost"

    def describe(self):
        if self.kind == "srun":
            return f"srun in Slurm job {os.environ.get('SLURM_JOB_ID', '?')}, up to {self.nodes} node(s)"
        return "mpirun on this node"

    def words(self, n, nodes=1):
        """The words before a program that start it as n ranks on `nodes` nodes."""
        if self.kind == "srun":
            w = ["srun", f"--nodes={nodes}", f"--ntasks={n}", f"--ntasks-per-node={-(-n // nodes)}",
                 "--kill-on-bad-exit=1", "--overlap", f"--cpus-per-task={self.cpus}"]
            if self.device == "cpu":
                w.append("--mpi=pmix")
            return w + self.extra
        return ["mpirun", "-n", str(n), "--oversubscribe", "--bind-to", "none"]

    def env(self):
        """The environment of one run: a fresh port for NCCL's meeting under srun; CUDA's
        device numbers in nvidia-smi's order (PCI bus), so that a rank's GPU can be found
        in nvidia-smi's listing."""
        e = dict(os.environ, CUDA_DEVICE_ORDER="PCI_BUS_ID", **OMPI_ROOT)
        if self.kind == "srun":
            e.update(MASTER_ADDR=self.master, MASTER_PORT=str(random.randrange(20000, 45000)))
        return e


def _output(words):
    try:
        return subprocess.run(words, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def run(words, timeout, env=None, out_path=None, on_start=None):
    """Runs words to the end or for `timeout` seconds (then its process group is killed):
    (exit status or None when it timed out, its output, seconds). on_start(popen, path)
    is called once it runs (the killed-rank item's victim hunt)."""
    start = time.monotonic()
    with open(out_path or os.devnull, "w", encoding="utf-8") as out:
        p = subprocess.Popen(words, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        if on_start:
            on_start(p, out_path)
        try:
            rc = p.wait(timeout=max(1, timeout - (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            rc = None
            for sig in (15, 9):
                try:
                    os.killpg(p.pid, sig)
                    p.wait(timeout=10)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    continue
    text = ""
    if out_path:
        with open(out_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    return rc, text, time.monotonic() - start
