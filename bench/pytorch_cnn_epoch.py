"""Lesson 01's run in PyTorch: the simple CNN trained on Fashion-MNIST (or MNIST) for
whole epochs as solutions/01-cpu-cnn does it, for make bench's whole-epoch ratio.

The same work as the C program: the IDX files read (plain or .gz) and scaled to [0, 1]
(lib/data/idx.c), the same model and PyTorch's default initialisation, Adam lr 1e-3,
batches of 100 in a new shuffled order every epoch (the last one short), the mean
cross-entropy; after each epoch the test set in order, in batches of 100, forward only:
its mean loss and accuracy. The batches are gathered by indexing the tensors, the
fastest way PyTorch offers (a DataLoader over a TensorDataset collates image by image
and is slower): the comparison gives PyTorch its best.

Prints one JSON object per epoch: the seconds of data loading (once, in the first),
training and evaluation, the training images/s (as the C program prints it: images
over training seconds), loss and accuracy, and total_s, the seconds since the script's
start (after Python's start-up and `import torch`, which are not counted).
  python3 pytorch_cnn_epoch.py --data /usr/share/datasets/fashion-mnist --threads 2
"""
import argparse
import gzip
import json
import os
import time

import torch
from torch import nn

IDX = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
       "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def read_idx(directory, name):
    """An IDX file's payload as a uint8 tensor of its shape: plain first, then .gz."""
    path = os.path.join(directory, name)
    if os.path.exists(path):
        with open(path, "rb") as f:
            raw = f.read()
    else:
        with gzip.open(path + ".gz", "rb") as f:
            raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    data = torch.frombuffer(bytearray(raw[4 + 4 * dims:]), dtype=torch.uint8)
    return data.view(*shape)


def load(directory):
    """(train images [N, 1, 28, 28] in [0, 1], labels [N]) and the same for test."""
    x_train, y_train, x_test, y_test = (read_idx(directory, n) for n in IDX)
    def images(x):
        return (x.float() / 255.0).unsqueeze(1)
    return images(x_train), y_train.long(), images(x_test), y_test.long()


def make_model(size=28):
    d = ((size - 4) // 2 - 4) // 2
    return nn.Sequential(
        nn.Conv2d(1, 50, 5), nn.MaxPool2d(2), nn.ReLU(),
        nn.Conv2d(50, 75, 5), nn.MaxPool2d(2), nn.ReLU(),
        nn.Flatten(), nn.Linear(75 * d * d, 50), nn.ReLU(), nn.Linear(50, 10))


def evaluate(model, loss_fn, x, y, batch):
    model.eval()
    loss_sum, correct = 0.0, 0
    with torch.no_grad():
        for start in range(0, x.size(0), batch):
            logits = model(x[start:start + batch])
            labels = y[start:start + batch]
            loss_sum += loss_fn(logits, labels).item() * labels.numel()
            correct += (logits.argmax(1) == labels).sum().item()
    model.train()
    return loss_sum / x.size(0), correct / x.size(0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="directory with the four IDX files")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args()
    script_start = time.perf_counter()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    t0 = time.perf_counter()
    x_train, y_train, x_test, y_test = load(args.data)
    load_s = time.perf_counter() - t0
    model = make_model(x_train.size(2))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        order = torch.randperm(x_train.size(0))
        loss_sum = 0.0
        for start in range(0, x_train.size(0), args.batch_size):
            idx = order[start:start + args.batch_size]
            x, y = x_train[idx], y_train[idx]
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * y.numel()
        train_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        test_loss, accuracy = evaluate(model, loss_fn, x_test, y_test, args.batch_size)
        eval_s = time.perf_counter() - t0
        print(json.dumps({
            "impl": "pytorch", "version": torch.__version__, "threads": torch.get_num_threads(),
            "epoch": epoch, "load_s": load_s if epoch == 1 else 0.0, "train_s": train_s,
            "eval_s": eval_s, "images_per_s": x_train.size(0) / train_s,
            "train_loss": loss_sum / x_train.size(0), "test_loss": test_loss,
            "test_accuracy": accuracy,
            "total_s": time.perf_counter() - script_start}), flush=True)


if __name__ == "__main__":
    main()
