"""The simple CNN in PyTorch, timed exactly like bench_cnn.c: training steps
(forward, loss, backward, Adam) on a fixed random batch, after a warm-up.
Prints one JSON object. Usage: python3 pytorch_cnn.py THREADS [STEPS]"""
import json
import sys
import time

import torch
from torch import nn


def main():
    threads = int(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    channels, size, batch, warmup = 1, 28, 100, 5
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    d = ((size - 4) // 2 - 4) // 2
    model = nn.Sequential(
        nn.Conv2d(channels, 50, 5), nn.MaxPool2d(2), nn.ReLU(),
        nn.Conv2d(50, 75, 5), nn.MaxPool2d(2), nn.ReLU(),
        nn.Flatten(), nn.Linear(75 * d * d, 50), nn.ReLU(), nn.Linear(50, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.rand(batch, channels, size, size)
    y = torch.randint(0, 10, (batch,))
    for step in range(warmup + steps):
        if step == warmup:
            start = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    seconds = time.perf_counter() - start
    print(json.dumps({
        "impl": "pytorch", "version": torch.__version__, "threads": threads,
        "params": sum(p.numel() for p in model.parameters()),
        "images_per_s": steps * batch / seconds}))


if __name__ == "__main__":
    main()
