"""Lesson 04's model in PyTorch written as fast as PyTorch allows, for make bench-gpu-lm
(bench/bench_gpu_lm.py times it against the library on the same GPU).

The same function as the tutorial's TransformerModel that lib/models/ builds (and
bench/pytorch_transformer.py runs as the tutorial writes it): embedding * sqrt(D) +
the sinusoidal table, dropout; L post-norm encoder layers (norm_first=False, ReLU),
    y = LayerNorm(x + Dropout(OutProj(Attention(InProj(x)))))    attention: causal, dropout p
    z = LayerNorm(y + Dropout(Linear2(Dropout(ReLU(Linear1(y))))))
then Linear(D -> V) and the cross-entropy of the next tokens. Written the way a
participant's fast script would: batch-first [B, T] rows, one fused q/k/v linear,
F.scaled_dot_product_attention(is_causal=True, dropout_p=p) (flash attention), bf16
autocast (float32 master weights), the loss inside the compiled function, fused AdamW,
torch.compile of model and loss together. Each feature is used where this PyTorch has
it; FEATURES says which were not, and why (PyTorch 1.13: no compile, no
scaled_dot_product_attention, no fused AdamW: the attention is then written out with
the causal mask, AdamW runs foreach).

Standalone, on random tokens (the speed does not depend on them):
    python3 pytorch_lm_fast.py --device cuda --batch-size 64 --bptt 128 --vocab 11500
prints one JSON object."""
import argparse
import inspect
import json
import math
import time

import torch
import torch.nn.functional as F
from torch import nn


def flops_per_token(D, F_, L, V, T):
    """Training FLOPs per token, lesson 04's transformer_train_flops_per_token
    (course/04-transformer/flops.c): per layer and token the multiply-adds of q/k/v,
    out_proj, the two feed-forward linears and the causal attention ((T + 1) / 2 keys
    on average), plus the decoder; x 2 FLOPs, x 3 for forward and backward."""
    layer = D * 3 * D + D * D + D * F_ + F_ * D + 2 * D * (T + 1) / 2.0
    return 3 * 2 * (L * layer + D * V)


def features(device, compile_wanted=True):
    """{feature: None where used, else why not}, for this PyTorch on this device."""
    f = {}
    f["bf16 autocast"] = None if hasattr(torch, "autocast") else f"no torch.autocast in PyTorch {torch.__version__}"
    f["scaled_dot_product_attention"] = (
        None if hasattr(F, "scaled_dot_product_attention")
        else f"not in PyTorch {torch.__version__} (the attention written out, causal mask and dropout)")
    if "fused" not in inspect.signature(torch.optim.AdamW.__init__).parameters:
        f["fused AdamW"] = f"AdamW has no fused= in PyTorch {torch.__version__} (foreach AdamW instead)"
    else:
        f["fused AdamW"] = None  # tried at build time; a device without it is noted then
    if not compile_wanted:
        f["torch.compile"] = "not asked for (eager)"
    elif not hasattr(torch, "compile"):
        f["torch.compile"] = f"not in PyTorch {torch.__version__}"
    else:
        f["torch.compile"] = None
    return f


class Encoder(nn.Module):
    def __init__(self, D, H, F_, p, sdpa):
        super().__init__()
        self.H, self.p, self.sdpa = H, p, sdpa
        self.qkv = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, D)
        self.l1 = nn.Linear(D, F_)
        self.l2 = nn.Linear(F_, D)
        self.n1 = nn.LayerNorm(D)
        self.n2 = nn.LayerNorm(D)

    def attention(self, q, k, v):  # each [B, H, T, dh]
        p = self.p if self.training else 0.0
        if self.sdpa:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        T = q.size(-2)
        s = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        return F.dropout(s.softmax(-1), p, self.training) @ v

    def forward(self, x):  # [B, T, D]
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.H, D // self.H).permute(2, 0, 3, 1, 4)
        ctx = self.attention(q, k, v).transpose(1, 2).reshape(B, T, D)
        y = self.n1(x + F.dropout(self.out(ctx), self.p, self.training))
        h = F.dropout(F.relu(self.l1(y)), self.p, self.training)
        return self.n2(y + F.dropout(self.l2(h), self.p, self.training))


class FastLM(nn.Module):
    """tokens [B, T] and targets [B, T] -> the mean cross-entropy (float32)."""

    def __init__(self, V, D, H, F_, L, p, sdpa, max_len=5000):
        super().__init__()
        self.D, self.V, self.p = D, V, p
        self.embedding = nn.Embedding(V, D)
        self.layers = nn.ModuleList(Encoder(D, H, F_, p, sdpa) for _ in range(L))
        self.decoder = nn.Linear(D, V)
        position = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, D, 2) * (-math.log(10000.0) / D))
        pe = torch.zeros(max_len, D)
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)
        self.register_buffer("pe", pe)
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)  # the tutorial's init_weights
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, tokens, targets):
        T = tokens.size(1)
        x = F.dropout(self.embedding(tokens) * math.sqrt(self.D) + self.pe[:T], self.p, self.training)
        for layer in self.layers:
            x = layer(x)
        logits = self.decoder(x)
        return F.cross_entropy(logits.view(-1, self.V).float(), targets.reshape(-1))


class Trainer:
    """One model and optimiser at one shape, on batches of a token stream cut as the
    tutorial's batchify / get_batch cut it (columns of contiguous text, the next token
    as the target), held on the device so that a step copies nothing from the host."""

    def __init__(self, stream, V, size, B, T, device, compiled, dropout, lr=5e-4,
                 weight_decay=0.01, clip=0.5, compile_mode=None, seed=1):
        D, H, F_, L = size
        self.B, self.T, self.clip, self.device = B, T, clip, device
        self.features = features(device, compiled)
        torch.manual_seed(seed)
        sdpa = self.features["scaled_dot_product_attention"] is None
        self.model = FastLM(V, D, H, F_, L, dropout, sdpa).to(device).train()
        self.params = list(self.model.parameters())
        self.optimizer = self._adamw(lr, weight_decay)
        self.loss_fn = self.model
        if self.features["torch.compile"] is None:
            kw = {"dynamic": False}
            if compile_mode:
                kw["mode"] = compile_mode
            self.loss_fn = torch.compile(self.model, **kw)  # compiles at the first step
        rows = stream.numel() // B
        data = stream[:rows * B].view(B, rows)  # batchify, batch-first: column b is row b
        n = (rows - 1) // T
        if n < 1:
            raise ValueError(f"the text has {stream.numel()} tokens: too few for one batch of {B} x {T}")
        # one tensor a batch, each at offset 0 of its own storage: views into one tensor
        # would differ in their storage offset, which a compiled graph may guard on
        self.x = [data[:, i * T:(i + 1) * T].contiguous().to(device) for i in range(n)]
        self.y = [data[:, i * T + 1:(i + 1) * T + 1].contiguous().to(device) for i in range(n)]
        self.autocast = self.features["bf16 autocast"] is None
        self.steps = 0

    def _adamw(self, lr, weight_decay):
        if self.features["fused AdamW"] is None:
            try:
                return torch.optim.AdamW(self.params, lr=lr, weight_decay=weight_decay, fused=True)
            except (RuntimeError, ValueError) as e:  # a device fused AdamW does not support
                self.features["fused AdamW"] = f"refused on {self.device}: {str(e).splitlines()[0]} (foreach instead)"
        kw = {"foreach": True} if "foreach" in inspect.signature(torch.optim.AdamW.__init__).parameters else {}
        return torch.optim.AdamW(self.params, lr=lr, weight_decay=weight_decay, **kw)

    def step(self):
        """One training step; returns the loss as a tensor (nothing waits for it)."""
        i = self.steps % len(self.x)
        self.steps += 1
        self.optimizer.zero_grad(set_to_none=True)
        if self.autocast:
            with torch.autocast(device_type=self.device, dtype=torch.bfloat16):
                loss = self.loss_fn(self.x[i], self.y[i])
        else:
            loss = self.loss_fn(self.x[i], self.y[i])
        loss.backward()
        if self.clip > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        self.optimizer.step()
        return loss

    def sync(self):
        if self.device == "cuda":
            torch.cuda.synchronize()

    def warm_up(self, steps):
        """The first steps (torch.compile compiles in the first); returns the seconds."""
        t0 = time.perf_counter()
        for _ in range(steps):
            loss = self.step()
        loss.item()
        return time.perf_counter() - t0

    def timed(self, steps):
        """(tokens per second, the last loss) over `steps` steps: the device waited for
        before and after, the loss read once at the end (a training loop that logs every
        step would wait for the GPU every step)."""
        self.sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            loss = self.step()
        value = loss.item()
        seconds = time.perf_counter() - t0
        return steps * self.B * self.T / seconds, value


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--bptt", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=11500)
    ap.add_argument("--size", default="1024,4,1024,3", help="D,heads,d_hid,layers (the seed's)")
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--eager", action="store_true", help="no torch.compile")
    args = ap.parse_args()
    size = tuple(int(v) for v in args.size.split(","))
    g = torch.Generator().manual_seed(1)
    stream = torch.randint(0, args.vocab, (args.batch_size * (args.bptt * 4 + 1),), generator=g)
    t = Trainer(stream, args.vocab, size, args.batch_size, args.bptt, args.device,
                not args.eager, args.dropout)
    warm = t.warm_up(3)
    rate, loss = t.timed(args.steps)
    print(json.dumps({"impl": "pytorch", "version": torch.__version__, "device": args.device,
                      "batch": args.batch_size, "bptt": args.bptt, "vocab": args.vocab,
                      "tokens_per_s": rate, "loss": loss, "warm_up_s": warm,
                      "not_used": {k: v for k, v in t.features.items() if v}}))


if __name__ == "__main__":
    main()
