"""The simple CNN in PyTorch on the GPU, timed like bench_gpu.c: training steps
(forward, loss, backward, Adam) on a fixed random batch, after a warm-up, with the
GPU synchronised before and after; the loss is read back every step, as the C side
does. Full FP32 (no TF32), like cuBLAS's default in the C side.
Prints one JSON object. Usage: python3 pytorch_cnn_gpu.py [BATCH] [STEPS]"""
import json
import sys
import time

import torch
from torch import nn


def main():
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    warmup = 20
    if not torch.cuda.is_available():
        print(json.dumps({"impl": "pytorch", "error": "no CUDA device visible to PyTorch"}))
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    torch.manual_seed(1)
    model = nn.Sequential(
        nn.Conv2d(1, 50, 5), nn.MaxPool2d(2), nn.ReLU(),
        nn.Conv2d(50, 75, 5), nn.MaxPool2d(2), nn.ReLU(),
        nn.Flatten(), nn.Linear(75 * 4 * 4, 50), nn.ReLU(), nn.Linear(50, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.rand(batch, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)
    for step in range(warmup + steps):
        if step == warmup:
            torch.cuda.synchronize()
            start = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        loss.item()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(json.dumps({
        "impl": "pytorch", "version": torch.__version__,
        "device": torch.cuda.get_device_name(0), "batch": batch,
        "images_per_s": steps * batch / seconds}))


if __name__ == "__main__":
    main()
