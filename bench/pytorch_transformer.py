"""Lesson 04's transformer in PyTorch 1.13: the TransformerModel of the "Language
Modeling with nn.Transformer" tutorial, exactly (nn.TransformerEncoderLayer(d_model,
nhead, d_hid, dropout), sequence-first as the tutorial, causal mask, embedding and
decoder initialised uniform in +-0.1, decoder bias 0), on the token stream the C
library makes of the same text (lib/data/text.h: each line split on whitespace,
"<eos>" after every line, ids by first appearance in train, "<unk>" appended when train
has none; batchify and get_batch as the tutorial).

Two modes:

  speed (default): times the tutorial's training step (zero_grad, forward,
      CrossEntropyLoss, backward, clip_grad_norm_ 0.5, SGD lr 5.0) exactly as
      bench/bench_transformer.c does: the same batches (get_batch at rows 0, 35, 70, ...
      of the train split in 20 columns), ids at or beyond --vocab mapped to the last
      word, the same warm-up and timed steps. Prints one JSON object.
        python3 pytorch_transformer.py --model seed --threads 2

  --train: the tutorial's training run on the text's train/valid/test (the whole vocabulary
      unless --vocab is given): E epochs of SGD (lr 5.0, StepLR gamma 0.95 per epoch,
      clip 0.5, batch 20, bptt 35; evaluation batches of 10 as the tutorial), one line
      per epoch with the train loss (the mean over the epoch's tokens), the valid loss
      and ppl, then the test loss and ppl. --json prints JSON lines instead, the last
      with total_s: the seconds from reading the text to the test loss (Python's start
      and `import torch` not counted), for make bench's whole-epoch ratio.
        python3 pytorch_transformer.py --train --epochs 3 --threads 2

--device cuda runs either mode on the GPU (the model, the batches and the mask there;
the timing waits for the GPU), for tokens/s against lesson 04's --device cuda.

The text: --dataset fortunes (the default; Debian's fortunes package, its files put
together and cut 80/10/10 at line ends as lib/data/text_fortunes.c does) or --dataset
text --data FILE|DIR, read as text_load("text", ...) reads it.
"""
import argparse
import io
import json
import math
import os
import sys
import time

import torch
from torch import nn


# ---------------------------------------------------------------- data

FORTUNES_DIR = "/usr/share/games/fortunes"


def lines_of(data):
    """The lines of bytes as lib/data reads them: ends \n, \r\n or \r, kept."""
    out, pos, n = [], 0, len(data)
    while pos < n:
        e = pos
        while e < n and data[e] not in b"\r\n":
            e += 1
        nxt = e
        if nxt < n:
            nxt += 2 if data[nxt:nxt + 2] == b"\r\n" else 1
        out.append((data[pos:e], data[pos:nxt]))
        pos = nxt
    return out


def fortunes_text(directory):
    """text_fortunes_read: the plain files in byte order of their names (no *.dat, *.u8,
    links, hidden files), the lines that are only "%" left out, a line end added after a
    file's last line when it has none."""
    out = bytearray()
    for name in sorted(os.listdir(directory), key=os.fsencode):
        path = os.path.join(directory, name)
        if (name.startswith(".") or name.endswith((".dat", ".u8")) or os.path.islink(path)
                or not os.path.isfile(path)):
            continue
        with open(path, "rb") as f:
            for body, whole in lines_of(f.read()):
                if body != b"%":
                    out += whole if whole != body else body + b"\n"
    return bytes(out)


def cut_after_line(text, at):
    """The first line start at or after byte `at` (lib/data/text_load.c)."""
    n = len(text)
    if at == 0 or at >= n:
        return min(at, n)
    if text[at - 1:at] == b"\n" or (text[at - 1:at] == b"\r" and text[at:at + 1] != b"\n"):
        return at
    p = at
    while p < n and text[p] not in b"\r\n":
        p += 1
    if p < n:
        p += 2 if text[p:p + 2] == b"\r\n" else 1
    return p


def split_text(text):
    """text_parse_split: train the first 80% of the bytes, valid the next 10%, test the
    rest, each cut at a line end."""
    n = len(text)
    cut1 = cut_after_line(text, n // 10 * 8)
    cut2 = cut_after_line(text, max(cut1, n // 10 * 9))
    return [text[:cut1], text[cut1:cut2], text[cut2:]]


def load_splits(dataset, path):
    """The three splits' bytes, as text_load(dataset, path) reads them."""
    if dataset == "fortunes":
        return split_text(fortunes_text(path or FORTUNES_DIR))
    if not path:
        sys.exit("--dataset text needs --data FILE or DIR")
    if os.path.isdir(path):
        names = ("train.txt", "valid.txt", "test.txt")
        if not os.path.isfile(os.path.join(path, names[0])):
            names = ("wiki.train.tokens", "wiki.valid.tokens", "wiki.test.tokens")
        splits = []
        for name in names:
            with open(os.path.join(path, name), "rb") as f:
                splits.append(f.read())
        return splits
    with open(path, "rb") as f:
        return split_text(f.read())


def tokenize(splits):
    """word_language_model's data.Corpus as lib/data/text.h does it: each line split on
    whitespace, "<eos>" after it; ids in order of first appearance in train; a word of
    valid or test that train lacks becomes "<unk>" (appended when train has none)."""
    word_id = {}
    streams = []
    for split, data in enumerate(splits):
        ids = []
        # Python's text mode: lines end in \n, \r\n or \r, as lib/data/text.h reads them
        for line in io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig" if split == 0 else "utf8"):
            for w in line.split() + ["<eos>"]:
                if split == 0:
                    ids.append(word_id.setdefault(w, len(word_id)))
                else:
                    ids.append(word_id.get(w, -1))
        streams.append(ids)
    if "<unk>" not in word_id:
        word_id["<unk>"] = len(word_id)
    unk = word_id["<unk>"]
    streams = [torch.tensor([unk if i < 0 else i for i in s], dtype=torch.long)
               for s in streams]
    return len(word_id), streams


def batchify(data, bsz):
    """The tutorial's batchify: [rows, bsz], column b the b-th contiguous piece."""
    rows = data.size(0) // bsz
    return data[:rows * bsz].view(bsz, rows).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


# ---------------------------------------------------------------- model

# The tutorial's PositionalEncoding and TransformerModel (and the causal mask) as the
# reference generator of the unit tests defines them; the tutorial's init_weights here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "reference"))
import make_transformer_reference as reference  # noqa: E402

causal_mask = reference.causal_mask  # nn.Transformer.generate_square_subsequent_mask


class TransformerModel(reference.TransformerModel):
    """The tutorial's model with its init_weights: embedding and decoder uniform in
    +-0.1, decoder bias 0, PyTorch's defaults elsewhere."""

    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.5):
        super().__init__(ntoken, d_model, nhead, d_hid, nlayers, dropout)
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)


PRESETS = {  # d_model, heads, d_hid, layers (dropout 0.2 both)
    "tutorial": (200, 2, 200, 2),
    "seed": (1024, 4, 1024, 3),
}


def make_model(preset, ntokens, dropout=0.2):
    d_model, heads, d_hid, layers = PRESETS[preset]
    return TransformerModel(ntokens, d_model, heads, d_hid, layers, dropout)


def train_step(model, optimizer, criterion, data, targets, mask, ntokens):
    """One step of the tutorial's train()."""
    optimizer.zero_grad()
    output = model(data, mask)
    loss = criterion(output.view(-1, ntokens), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    return loss


# ---------------------------------------------------------------- modes

def speed(args):
    ntokens_corpus, (train,) = tokenize(load_splits(args.dataset, args.data)[:1])
    ntokens = min(args.vocab or ntokens_corpus, ntokens_corpus)
    train = torch.clamp(train, max=ntokens - 1)
    bsz, bptt = args.batch_size, args.bptt
    data = batchify(train, bsz).to(args.device)
    starts = (data.size(0) - 1) // bptt
    steps = args.steps or (6 if args.model == "seed" else 40)
    model = make_model(args.model, ntokens).to(args.device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
    mask = causal_mask(bptt).to(args.device)
    model.train()
    best = float("inf")
    for step in range(args.warmup + steps):
        if step == args.warmup:
            sync(args.device)
            start = time.perf_counter()
        x, y = get_batch(data, (step % starts) * bptt, bptt)
        t0 = time.perf_counter()
        loss = train_step(model, optimizer, criterion, x, y, mask, ntokens)
        loss_value = loss.item()  # waits for the step, on a GPU too
        if step >= args.warmup:
            best = min(best, time.perf_counter() - t0)
    seconds = time.perf_counter() - start
    print(json.dumps({
        "impl": "pytorch", "version": torch.__version__, "model": args.model,
        "device": args.device,
        "threads": torch.get_num_threads(), "batch": bsz, "bptt": bptt, "vocab": ntokens,
        "corpus_vocab": ntokens_corpus, "params": sum(p.numel() for p in model.parameters()),
        "steps": steps, "tokens_per_s": steps * bsz * bptt / seconds,
        "best_step_ms": 1e3 * best, "loss": loss_value}))


def sync(device):
    """Waits for the GPU's queued work, so that a clock read after it is fair."""
    if device == "cuda":
        torch.cuda.synchronize()


def evaluate(model, criterion, source, bptt, ntokens):
    """The tutorial's evaluate(): the mean loss over the split's targets."""
    model.eval()
    total = 0.0
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, bptt):
            x, y = get_batch(source, i, bptt)
            output = model(x, causal_mask(x.size(0)).to(x.device))
            total += x.size(0) * criterion(output.view(-1, ntokens), y).item()
    return total / (len(source) - 1)


def train(args):
    start = time.perf_counter()  # the whole run's seconds count from here (after import torch)
    ntokens, (train_ids, valid_ids, test_ids) = tokenize(load_splits(args.dataset, args.data))
    if args.vocab:
        sys.exit("--train uses the corpus's whole vocabulary (no --vocab)")
    bptt = args.bptt
    train_data = batchify(train_ids, args.batch_size).to(args.device)
    valid_data = batchify(valid_ids, args.eval_batch_size).to(args.device)
    test_data = batchify(test_ids, args.eval_batch_size).to(args.device)
    torch.manual_seed(args.seed)
    model = make_model(args.model, ntokens, args.dropout).to(args.device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)
    if not args.json:
        print(f"PyTorch {torch.__version__}, {args.model} model, {ntokens} words "
              f"(train {len(train_ids)}, valid {len(valid_ids)}, test {len(test_ids)} tokens), "
              f"batch {args.batch_size} (eval {args.eval_batch_size}), bptt {bptt}, "
              f"lr {args.lr}, {torch.get_num_threads()} threads, {args.device}, seed {args.seed}")
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        total, count = 0.0, 0
        for i in range(0, train_data.size(0) - 1, bptt):
            x, y = get_batch(train_data, i, bptt)
            loss = train_step(model, optimizer, criterion, x, y,
                              causal_mask(x.size(0)).to(args.device), ntokens)
            total += loss.item() * y.numel()
            count += y.numel()
        sync(args.device)
        seconds = time.perf_counter() - t0
        val_loss = evaluate(model, criterion, valid_data, bptt, ntokens)
        row = {"epoch": epoch, "train_loss": total / count, "valid_loss": val_loss,
               "valid_ppl": math.exp(val_loss), "seconds": seconds,
               "tokens_per_s": count / seconds}
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print(f"| end of epoch {epoch:3d} | time: {seconds:6.2f}s | train loss "
                  f"{row['train_loss']:5.2f} | valid loss {val_loss:5.2f} | valid ppl "
                  f"{row['valid_ppl']:8.2f} | {row['tokens_per_s']:.0f} tokens/s", flush=True)
        scheduler.step()
    test_loss = evaluate(model, criterion, test_data, bptt, ntokens)
    if args.json:
        print(json.dumps({"test_loss": test_loss, "test_ppl": math.exp(test_loss),
                          "total_s": time.perf_counter() - start}))
    else:
        print(f"| end of training | test loss {test_loss:5.2f} | test ppl "
              f"{math.exp(test_loss):8.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", action="store_true", help="train and evaluate (else: time steps)")
    p.add_argument("--model", choices=sorted(PRESETS), default="tutorial")
    p.add_argument("--dataset", choices=["fortunes", "text"], default="fortunes",
                   help="the text, read and cut as lib/data/text.h does")
    p.add_argument("--data", default="",
                   help="fortunes: the directory (default %s); text: a file or a directory "
                   "with train.txt, valid.txt, test.txt" % FORTUNES_DIR)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--vocab", type=int, default=0,
                   help="speed: ids at or beyond it become the last word (0: the corpus's)")
    p.add_argument("--batch-size", type=int, default=20)
    p.add_argument("--eval-batch-size", type=int, default=10)
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--steps", type=int, default=0, help="speed: timed steps (0: 40 or 6 for seed)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=5.0)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: PyTorch sees no GPU here (torch.cuda.is_available() is False)")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    (train if args.train else speed)(args)


if __name__ == "__main__":
    main()
