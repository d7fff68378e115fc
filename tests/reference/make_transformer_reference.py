#!/usr/bin/python3
"""Reference values for the transformer's layers and model from real PyTorch.

Run with Debian's python3 (python3-torch, PyTorch 1.13):
    /usr/bin/python3 tests/reference/make_transformer_reference.py \\
        > tests/reference/transformer_reference.h

For small sizes it records inputs, outputs and gradients of
  - the embedding (nn.Embedding times sqrt(d_model), repeated tokens),
  - the positional-encoding table (the tutorial's PositionalEncoding),
  - nn.LayerNorm (with the mean and 1/std that torch.native_layer_norm saves),
  - nn.MultiheadAttention with a causal mask (per-head weights, and the context
    before the out-projection),
  - F.gelu (exact), nn.CrossEntropyLoss (mean),
  - the whole TransformerModel of PyTorch's "Language Modeling with nn.Transformer"
    tutorial (the names of the seed's copy: embedding, pos_encoder,
    transformer_encoder, linear) with dropout 0: weights under their state_dict
    names, tokens, targets, the hidden states after the positional encoding and after
    each encoder layer, the logits, the loss and every parameter's gradient.

The gradients are those of L = sum(output * R) for a recorded R (the layers) or of
the loss (the model). PyTorch's activations are [T, B, D] (sequence first); the C
library's are batch-major rows b*T + t, so everything sequence-shaped is written
permuted to that order. Everything runs on one thread from fixed seeds, so running
the script again writes the same file.
"""
import math
import re
import sys

import torch
import torch.nn.functional as F
from torch import nn

OUT = sys.stdout


# ----------------------------------------------------------------- writing C

def c_float(v):
    """A float32 value as a C literal that reads back exactly (9 significant digits)."""
    if math.isinf(v) or math.isnan(v):
        raise ValueError("non-finite reference value")
    text = "%.9g" % v
    if "." not in text and "e" not in text:
        text += ".0"
    return text + "f"


def emit_floats(name, tensor, comment=None):
    values = tensor.detach().reshape(-1).tolist()
    if comment:
        OUT.write("/* %s */\n" % comment)
    OUT.write("TF_REF_DATA float %s[%d] = {" % (name, len(values)))
    for i, v in enumerate(values):
        OUT.write(("\n    " if i % 6 == 0 else " ") + c_float(v) + ",")
    OUT.write("\n};\n")


def emit_ints(name, values, comment=None):
    if comment:
        OUT.write("/* %s */\n" % comment)
    OUT.write("TF_REF_DATA int %s[%d] = {%s};\n" % (name, len(values),
                                                  ", ".join(str(int(v)) for v in values)))


def emit_sizes(prefix, **sizes):
    OUT.write("enum { %s };\n" % ", ".join("%s_%s = %d" % (prefix, k, v) for k, v in sizes.items()))


def batch_major(x):
    """[T, B, ...] -> [B*T, ...] (row b*T + t)."""
    x = x.transpose(0, 1)
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])


def uniform(*shape, lo=-1.0, hi=1.0):
    return torch.rand(*shape) * (hi - lo) + lo


# ----------------------------------------------------------------- the tutorial's model

class PositionalEncoding(nn.Module):
    """The tutorial's: sin on even, cos on odd columns, then dropout."""

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


class TransformerModel(nn.Module):
    """The tutorial's TransformerModel (norm_first=False, ReLU feed-forward)."""

    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.5):
        super().__init__()
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers)
        self.linear = nn.Linear(d_model, ntoken)

    def forward(self, src, src_mask, hidden=None):
        x = self.embedding(src) * math.sqrt(self.d_model)
        x = self.pos_encoder(x)
        if hidden is not None:
            hidden.append(x)
        # the encoder's layers one by one (what nn.TransformerEncoder does, with no
        # final norm), so the hidden state after each can be recorded
        for layer in self.transformer_encoder.layers:
            x = layer(x, src_mask=src_mask)
            if hidden is not None:
                hidden.append(x)
        return self.linear(x)


def causal_mask(T):
    """generate_square_subsequent_mask: -inf above the diagonal, 0 elsewhere."""
    return torch.triu(torch.full((T, T), float("-inf")), diagonal=1)


# ----------------------------------------------------------------- the cases

def embedding_case():
    V, D, N = 7, 6, 9
    emb = nn.Embedding(V, D)
    with torch.no_grad():
        emb.weight.copy_(uniform(V, D))
    tokens = torch.tensor([3, 1, 3, 0, 6, 3, 2, 1, 5])  # 3 three times, 1 twice, 4 never
    scale = math.sqrt(D)
    out = emb(tokens) * scale
    R = uniform(N, D)
    (out * R).sum().backward()
    OUT.write("\n/* ---- embedding: out = nn.Embedding(V, D)(tokens) * sqrt(D) */\n")
    emit_sizes("TF_REF_EMB", V=V, D=D, N=N)
    emit_ints("TF_REF_EMB_TOKENS", tokens.tolist())
    emit_floats("TF_REF_EMB_TABLE", emb.weight, "table [V, D]")
    emit_floats("TF_REF_EMB_OUT", out, "out [N, D]")
    emit_floats("TF_REF_EMB_R", R, "R = dL/dout [N, D]")
    emit_floats("TF_REF_EMB_DTABLE", emb.weight.grad, "dL/dtable [V, D]")


def positional_case():
    OUT.write("\n/* ---- positional encoding: the tutorial's PositionalEncoding(D).pe */\n")
    small = PositionalEncoding(8, dropout=0.0, max_len=64).pe[:, 0, :]
    emit_sizes("TF_REF_PE_SMALL", D=8, MAX_LEN=64)
    emit_floats("TF_REF_PE_SMALL_TABLE", small, "table [64, 8]")
    rows = [0, 1, 2, 17, 34, 999, 4999]
    big = PositionalEncoding(200, dropout=0.0, max_len=5000).pe[:, 0, :]
    emit_sizes("TF_REF_PE_BIG", D=200, MAX_LEN=5000, ROWS=len(rows))
    emit_ints("TF_REF_PE_BIG_POSITIONS", rows, "rows of the D = 200, max_len 5000 table")
    emit_floats("TF_REF_PE_BIG_TABLE", big[rows], "those rows [ROWS, 200]")


def layernorm_case():
    N, D = 5, 7
    ln = nn.LayerNorm(D)
    with torch.no_grad():
        ln.weight.copy_(1.0 + 0.5 * uniform(D))
        ln.bias.copy_(0.5 * uniform(D))
    x = (uniform(N, D) * 2.0 + 0.5).requires_grad_()
    out = ln(x)
    _, mean, rstd = torch.native_layer_norm(x.detach(), [D], ln.weight.detach(),
                                            ln.bias.detach(), 1e-5)
    R = uniform(N, D)
    (out * R).sum().backward()
    OUT.write("\n/* ---- layer norm: nn.LayerNorm(D), eps 1e-5 */\n")
    emit_sizes("TF_REF_LN", N=N, D=D)
    emit_floats("TF_REF_LN_IN", x, "in [N, D]")
    emit_floats("TF_REF_LN_GAMMA", ln.weight, "weight (gamma) [D]")
    emit_floats("TF_REF_LN_BETA", ln.bias, "bias (beta) [D]")
    emit_floats("TF_REF_LN_OUT", out, "out [N, D]")
    emit_floats("TF_REF_LN_MEAN", mean.reshape(-1), "mean [N]")
    emit_floats("TF_REF_LN_RSTD", rstd.reshape(-1), "rstd [N]")
    emit_floats("TF_REF_LN_R", R, "R = dL/dout [N, D]")
    emit_floats("TF_REF_LN_DIN", x.grad, "dL/din [N, D]")
    emit_floats("TF_REF_LN_DGAMMA", ln.weight.grad, "dL/dgamma [D]")
    emit_floats("TF_REF_LN_DBETA", ln.bias.grad, "dL/dbeta [D]")


def attention_case():
    T, B, D, H = 5, 3, 8, 2
    dh = D // H
    mha = nn.MultiheadAttention(D, H)
    with torch.no_grad():
        mha.in_proj_weight.copy_(uniform(3 * D, D))
        mha.in_proj_bias.copy_(0.5 * uniform(3 * D))
        mha.out_proj.weight.copy_(uniform(D, D))
        mha.out_proj.bias.copy_(0.5 * uniform(D))
    x = uniform(T, B, D).requires_grad_()
    mask = causal_mask(T)
    out, probs = mha(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)
    # the context before the out-projection, by the definition (checked against PyTorch)
    with torch.no_grad():
        qkv = F.linear(x, mha.in_proj_weight, mha.in_proj_bias)        # [T, B, 3D]
        q, k, v = (t.reshape(T, B * H, dh).transpose(0, 1) for t in qkv.chunk(3, dim=-1))
        w = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dh) + mask, dim=-1)
        ctx = (w @ v).transpose(0, 1).reshape(T, B, D)
        again = F.linear(ctx, mha.out_proj.weight, mha.out_proj.bias)
        assert torch.allclose(again, out, atol=1e-6), "context does not give PyTorch's output"
        assert torch.allclose(w.reshape(B, H, T, T), probs, atol=1e-7)
    R = uniform(T, B, D)
    (out * R).sum().backward()
    OUT.write("\n/* ---- self-attention: nn.MultiheadAttention(D, H) with the causal mask,\n"
              " * x of [T, B, D] written batch-major [B*T, D] */\n")
    emit_sizes("TF_REF_ATT", T=T, B=B, D=D, H=H)
    emit_floats("TF_REF_ATT_X", batch_major(x), "x [B*T, D]")
    emit_floats("TF_REF_ATT_IN_PROJ_WEIGHT", mha.in_proj_weight, "in_proj_weight [3D, D]")
    emit_floats("TF_REF_ATT_IN_PROJ_BIAS", mha.in_proj_bias, "in_proj_bias [3D]")
    emit_floats("TF_REF_ATT_OUT_PROJ_WEIGHT", mha.out_proj.weight, "out_proj.weight [D, D]")
    emit_floats("TF_REF_ATT_OUT_PROJ_BIAS", mha.out_proj.bias, "out_proj.bias [D]")
    emit_floats("TF_REF_ATT_PROBS", probs, "per-head attention weights [B, H, T, T]")
    emit_floats("TF_REF_ATT_CTX", batch_major(ctx), "context before out_proj [B*T, D]")
    emit_floats("TF_REF_ATT_OUT", batch_major(out), "output [B*T, D]")
    emit_floats("TF_REF_ATT_R", batch_major(R), "R = dL/doutput [B*T, D]")
    emit_floats("TF_REF_ATT_DX", batch_major(x.grad), "dL/dx [B*T, D]")
    emit_floats("TF_REF_ATT_DIN_PROJ_WEIGHT", mha.in_proj_weight.grad, "[3D, D]")
    emit_floats("TF_REF_ATT_DIN_PROJ_BIAS", mha.in_proj_bias.grad, "[3D]")
    emit_floats("TF_REF_ATT_DOUT_PROJ_WEIGHT", mha.out_proj.weight.grad, "[D, D]")
    emit_floats("TF_REF_ATT_DOUT_PROJ_BIAS", mha.out_proj.bias.grad, "[D]")


def gelu_case():
    xs = torch.cat([torch.linspace(-6.0, 6.0, 41),
                    torch.tensor([0.0, 1e-3, -1e-3, 0.5, -0.5, 10.0, -10.0])]).requires_grad_()
    out = F.gelu(xs)
    R = uniform(xs.numel())
    (out * R).sum().backward()
    OUT.write("\n/* ---- GELU: F.gelu (exact, erf) */\n")
    emit_sizes("TF_REF_GELU", N=xs.numel())
    emit_floats("TF_REF_GELU_IN", xs)
    emit_floats("TF_REF_GELU_OUT", out)
    emit_floats("TF_REF_GELU_R", R)
    emit_floats("TF_REF_GELU_DIN", xs.grad)


def xent_case():
    N, V = 6, 13
    z = (3.0 * uniform(N, V)).requires_grad_()
    labels = torch.tensor([0, 12, 5, 5, 7, 1])
    loss = nn.CrossEntropyLoss()(z, labels)
    loss.backward()
    OUT.write("\n/* ---- nn.CrossEntropyLoss() (mean) */\n")
    emit_sizes("TF_REF_XENT", N=N, V=V)
    emit_ints("TF_REF_XENT_LABELS", labels.tolist())
    emit_floats("TF_REF_XENT_LOGITS", z, "logits [N, V]")
    OUT.write("#define TF_REF_XENT_LOSS %s\n" % c_float(loss.item()))
    emit_floats("TF_REF_XENT_DLOGITS", z.grad, "dloss/dlogits [N, V]")


def c_name(name):
    return "TF_REF_MODEL_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def model_case():
    V, D, H, HID, L, T, B = 11, 8, 2, 16, 2, 5, 3
    model = TransformerModel(V, D, H, HID, L, dropout=0.0)
    model.train()
    # nn.TransformerEncoder starts every layer as a copy of the same one; different
    # values per tensor (and gains and shifts away from 1 and 0) make a mix-up of
    # layers or names show in the comparison
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm1.weight") or name.endswith("norm2.weight"):
                p.copy_(1.0 + 0.3 * uniform(*p.shape))
            elif p.dim() == 1:
                p.copy_(0.2 * uniform(*p.shape))
            else:
                p.copy_(uniform(*p.shape) / math.sqrt(p.shape[1]))
    data = torch.randint(0, V, (T + 1, B))  # get_batch: source rows i..i+T, target i+1..
    src, target = data[:T], data[1:]
    hidden = []
    logits = model(src, causal_mask(T), hidden)
    with torch.no_grad():  # the layer-by-layer loop is what the encoder module does
        whole = model.linear(model.transformer_encoder(hidden[0], causal_mask(T)))
        assert torch.equal(whole, logits), "layer by layer differs from nn.TransformerEncoder"
    loss = nn.CrossEntropyLoss()(logits.reshape(-1, V), target.reshape(-1))
    loss.backward()

    OUT.write("\n/* ---- the tutorial's TransformerModel(ntoken %d, d_model %d, nhead %d, d_hid %d,\n"
              " * nlayers %d, dropout 0), sequence length %d, batch %d; CrossEntropyLoss of the\n"
              " * logits against the next tokens. Batch-major: row b*T + t is position t of\n"
              " * sequence b (PyTorch's src[t][b]). */\n" % (V, D, H, HID, L, T, B))
    emit_sizes("TF_REF_MODEL", V=V, D=D, H=H, HID=HID, LAYERS=L, T=T, B=B)
    emit_ints("TF_REF_MODEL_TOKENS", batch_major(src).tolist(), "input tokens [B*T]")
    emit_ints("TF_REF_MODEL_TARGETS", batch_major(target).tolist(), "next tokens [B*T]")
    emit_floats("TF_REF_MODEL_HIDDEN", torch.stack([batch_major(h) for h in hidden]),
                "[LAYERS + 1][B*T, D]: after the positional encoding, after each layer")
    emit_floats("TF_REF_MODEL_LOGITS", batch_major(logits), "logits [B*T, V]")
    OUT.write("#define TF_REF_MODEL_LOSS %s\n" % c_float(loss.item()))
    params = list(model.named_parameters())
    for name, p in params:
        emit_floats(c_name(name), p, "%s %s" % (name, list(p.shape)))
        emit_floats(c_name(name) + "_GRAD", p.grad)
    OUT.write("\n/* Every parameter by its PyTorch name (model.named_parameters() order). */\n"
              "typedef struct {\n"
              "    const char *name;\n"
              "    int ndim, shape[2];\n"
              "    const float *value, *grad;\n"
              "} TfRefParam;\n")
    OUT.write("enum { TF_REF_MODEL_PARAMS = %d };\n" % len(params))
    OUT.write("TF_REF_DATA TfRefParam TF_REF_MODEL_PARAM[TF_REF_MODEL_PARAMS] = {\n")
    for name, p in params:
        shape = list(p.shape) + [1] * (2 - p.dim())
        OUT.write('    {"%s", %d, {%d, %d}, %s, %s_GRAD},\n'
                  % (name, p.dim(), shape[0], shape[1], c_name(name), c_name(name)))
    OUT.write("};\n")


def main():
    torch.set_num_threads(1)
    torch.manual_seed(11)
    OUT.write("/* Generated by tests/reference/make_transformer_reference.py with PyTorch %s\n"
              " * (/usr/bin/python3, Debian's python3-torch): do not edit by hand.\n"
              " * Inputs, outputs and gradients of the transformer's layers and of the\n"
              " * tutorial's TransformerModel, float32, CPU, one thread. */\n" % torch.__version__)
    OUT.write("#ifndef TESTS_REFERENCE_TRANSFORMER_REFERENCE_H\n"
              "#define TESTS_REFERENCE_TRANSFORMER_REFERENCE_H\n\n")
    OUT.write("/* a test may use only some of the tables */\n"
              "#define TF_REF_DATA static const __attribute__((unused))\n")
    OUT.write("#define TF_REF_TORCH_VERSION \"%s\"\n" % torch.__version__)
    embedding_case()
    positional_case()
    layernorm_case()
    attention_case()
    gelu_case()
    xent_case()
    model_case()
    OUT.write("\n#endif\n")


if __name__ == "__main__":
    main()
