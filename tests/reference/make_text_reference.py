#!/usr/bin/python3
"""Reference token streams for tests/unit/test_text.c, from the Python code the course
copies:

    /usr/bin/python3 tests/reference/make_text_reference.py > tests/reference/text_reference.h

- word_language_model (PyTorch's examples, data.Corpus): each line of the file opened as
  UTF-8 text, line.split() + ['<eos>'], ids in order of first appearance;
- the nn.Transformer tutorial: torchtext's basic_english tokeniser (its regular
  expressions, written out below: torchtext is not packaged for Debian) and
  build_vocab_from_iterator(..., specials=['<unk>']) (counts, ties by the word, <unk> at 0);
- batchify and get_batch exactly as the tutorial writes them, with torch.

The texts are written to files and read back the way the programs read them (universal
newlines), so \\r and \\r\\n line ends count as they would. For the lower case, every code
point whose str.lower() differs is in the train text, one word each.
"""
import collections
import os
import re
import sys
import tempfile

import torch

# basic_english (torchtext/data/utils.py): applied in this order after str.lower()
PATTERNS = [(re.compile(p), r) for p, r in [
    (r"\'", " '  "), (r"\"", ""), (r"\.", " . "), (r"<br \/>", " "), (r",", " , "),
    (r"\(", " ( "), (r"\)", " ) "), (r"\!", " ! "), (r"\?", " ? "), (r"\;", " "),
    (r"\:", " "), (r"\s+", " ")]]

UPPER = "".join(chr(c) for c in range(0x110000)
                if chr(c).lower() != chr(c) and c != 0x3A3)  # Σ: see text.h
TRAIN = ("\n"
         " = Valkyria Chronicles III = \n"
         "Senjō no Valkyria 3 : <unk> Chronicles ( Japanese : 戦場のヴァルキュリア3 , lit . "
         "Valkyria of the Battlefield 3 ) , commonly referred to as \"Valkyria\" .\r\n"
         "The\tgame's  <unk> <BR /> began\u00a0development in 2010 , carrying\u3000over ; "
         "a large portion ... ÄÖÜ straße İstanbul ΑΘΗΝΑ ΦΙΛΟΣΟΦΙΑ!\r"
         "\n"
         "It met with positive sales in Japan , and was praised by both Japanese and "
         "western critics . The game's <unk> <br/> <br \"/> x:y;z a,b(c)d!e?f'g\n"
         "   \t  \n"
         + " ".join(UPPER) + "\n"
         "the the the a a b\x1cc\x85d\u2028e\u205ff\n"
         "Valkyria Valkyria the end")
VALID = ("\n = Tower Building of the Little Rock Arsenal = \n"
         "The Tower Building of the Little Rock Arsenal , also known as U.S. Arsenal "
         "Building , is a building located in MacArthur Park .\n"
         "Unheard-of words : zyzzyva the the\n")
TEST = ("\n = Robert <unk> = \n"
        "Robert <unk> is an English film , television and theatre actor . ÉCOLE\n")
SPLITS = [("train", TRAIN), ("valid", VALID), ("test", TEST)]


def read_lines(text):
    with tempfile.NamedTemporaryFile("wb", delete=False) as f:
        f.write(text.encode("utf-8"))
    try:
        with open(f.name, "r", encoding="utf8") as g:
            return list(g)
    finally:
        os.unlink(f.name)


def words_corpus():
    """word_language_model's data.Corpus, with the vocabulary from train alone."""
    idx, words, streams = {}, [], []
    for s, (_, text) in enumerate(SPLITS):
        ids, unknown = [], 0
        for line in read_lines(text):
            for w in line.split() + ["<eos>"]:
                if w not in idx and s == 0:
                    idx[w] = len(words)
                    words.append(w)
                if w not in idx:
                    if "<unk>" not in idx:
                        raise SystemExit("train must hold <unk> for this reference")
                    unknown += 1
                ids.append(idx.get(w, idx.get("<unk>")))
        streams.append((ids, unknown, len(read_lines(text))))
    return words, streams


def basic_english(line):
    line = line.lower()
    for pattern, repl in PATTERNS:
        line = pattern.sub(repl, line)
    return line.split()


def basic_english_corpus():
    counter = collections.Counter()
    for line in read_lines(TRAIN):
        counter.update(basic_english(line))
    ordered = [w for w, _ in sorted(counter.items(), key=lambda x: (-x[1], x[0]))]
    words = ["<unk>"] + [w for w in ordered if w != "<unk>"]
    idx = {w: i for i, w in enumerate(words)}
    streams = []
    for _, text in SPLITS:
        toks = [t for line in read_lines(text) for t in basic_english(line)]
        unknown = sum(1 for t in toks if t not in idx)
        streams.append(([idx.get(t, 0) for t in toks], unknown, len(read_lines(text))))
    return words, streams


def batchify(data, bsz):
    seq_len = data.size(0) // bsz
    data = data[:seq_len * bsz]
    return data.view(bsz, seq_len).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def c_string(text):
    """UTF-8 bytes as a C string literal: octal escapes (never swallow a following digit)."""
    out, col = ['"'], 0
    for b in text.encode("utf-8"):
        ch = chr(b)
        piece = ("\\%03o" % b if b < 0x20 or b >= 0x7f or ch in '"\\?' else ch)
        out.append(piece)
        col += len(piece)
        if col > 80 and b < 0x80:
            out.append('"\n    "')
            col = 0
    out.append('"')
    return "".join(out)


def c_ints(values):
    lines, row = [], []
    for v in values:
        row.append(str(v))
        if len(row) == 20:
            lines.append("    " + ", ".join(row) + ",")
            row = []
    if row:
        lines.append("    " + ", ".join(row) + ",")
    return "{\n" + "\n".join(lines) + "\n}"


def write_corpus(w, prefix, words, streams):
    w("static const char *const %s_WORDS[%d] = {\n" % (prefix, len(words)))
    for word in words:
        w("    %s,\n" % c_string(word))
    w("};\n")
    for (name, _), (ids, unknown, lines) in zip(SPLITS, streams):
        up = name.upper()
        w("enum { %s_%s_COUNT = %d, %s_%s_UNKNOWN = %d, %s_%s_LINES = %d };\n"
          % (prefix, up, len(ids), prefix, up, unknown, prefix, up, lines))
        w("static const int %s_%s[%d] = %s;\n" % (prefix, up, len(ids), c_ints(ids)))
    w("\n")


def main():
    w = sys.stdout.write
    w("/* Generated by tests/reference/make_text_reference.py with Python %s and PyTorch %s\n"
      " * (Debian's python3-torch): do not edit by hand. */\n"
      % (sys.version.split()[0], torch.__version__))
    w("#ifndef TESTS_REFERENCE_TEXT_REFERENCE_H\n#define TESTS_REFERENCE_TEXT_REFERENCE_H\n\n")
    for name, text in SPLITS:
        w("static const char TEXT_REF_%s[] =\n    %s;\n" % (name.upper(), c_string(text)))
    w("\n/* word_language_model */\n")
    words, streams = words_corpus()
    write_corpus(w, "WORDS", words, streams)
    w("/* torchtext basic_english + build_vocab_from_iterator(specials=['<unk>']) */\n")
    bwords, bstreams = basic_english_corpus()
    write_corpus(w, "BASIC", bwords, bstreams)

    # batchify(train, 7) and every get_batch with bptt 5, from the words' train stream
    bsz, bptt = 7, 5
    data = batchify(torch.tensor(streams[0][0], dtype=torch.long), bsz)
    w("/* batchify(WORDS_TRAIN, %d); get_batch(i, bptt %d) for i = 0, %d, ... */\n"
      % (bsz, bptt, bptt))
    w("enum { BATCH_REF_BSZ = %d, BATCH_REF_BPTT = %d, BATCH_REF_ROWS = %d, BATCH_REF_COUNT = %d };\n"
      % (bsz, bptt, data.size(0), len(range(0, data.size(0) - 1, bptt))))
    w("static const int BATCH_REF_DATA[%d] = %s;\n" % (data.numel(), c_ints(data.reshape(-1).tolist())))
    inputs, targets, lens = [], [], []
    for i in range(0, data.size(0) - 1, bptt):
        x, y = get_batch(data, i, bptt)
        inputs += x.reshape(-1).tolist()
        targets += y.tolist()
        lens.append(x.size(0))
    w("static const int BATCH_REF_SEQ_LEN[%d] = %s;\n" % (len(lens), c_ints(lens)))
    w("static const int BATCH_REF_INPUTS[%d] = %s;\n" % (len(inputs), c_ints(inputs)))
    w("static const int BATCH_REF_TARGETS[%d] = %s;\n" % (len(targets), c_ints(targets)))
    w("\n#endif\n")


if __name__ == "__main__":
    main()
