#include "lm_options.h"

#include <string.h>

#include "core/check.h"
#include "core/log.h"

LmOptions lm_options_defaults(void) {
    return (LmOptions){.tokenizer = "words", .dropout = -1.0f, .bptt = 35};
}

int lm_options_specs(LmOptions *o, ArgSpec *specs) {
    /* the integers' ranges: lm_options_check's, refused already as the command line is
     * read (args.h) */
    const ArgSpec shared[LM_OPTION_SPECS] = {
        {"tokenizer", ARG_CHOICE, &o->tokenizer, "words: word_language_model's (with <eos>); basic_english: the tutorial's torchtext one", "words|basic_english"},
        {"d-model", ARG_INT, &o->d_model, "model width (0: the preset's)", "0..65536"},
        {"heads", ARG_INT, &o->heads, "attention heads (0: the preset's)", "0..1024"},
        {"d-hid", ARG_INT, &o->d_hid, "feed-forward width (0: the preset's)", "0..262144"},
        {"layers", ARG_INT, &o->layers, "encoder layers (0: the preset's)", "0..1024"},
        {"dropout", ARG_FLOAT, &o->dropout, "dropout probability (-1: the preset's)", NULL},
        {"bptt", ARG_INT, &o->bptt, "tokens per sequence (get_batch)", "1..5000"},
    };
    for (int i = 0; i < LM_OPTION_SPECS; i++) specs[i] = shared[i];
    return LM_OPTION_SPECS;
}

void lm_options_check(const LmOptions *o) {
    /* the ranges of lm_options_specs, for options set by a program rather than parsed */
    const struct { const char *name; int value, min, max; } ints[] = {
        {"--d-model", o->d_model, 0, 1 << 16}, {"--heads", o->heads, 0, 1024},
        {"--d-hid", o->d_hid, 0, 1 << 18},     {"--layers", o->layers, 0, 1024},
        {"--bptt", o->bptt, 1, 5000},
    };
    for (int i = 0; i < (int)(sizeof ints / sizeof ints[0]); i++)
        if (ints[i].value < ints[i].min || ints[i].value > ints[i].max)
            fatal("%s must be %d to %d, got %d", ints[i].name, ints[i].min, ints[i].max, ints[i].value);
    if (!(o->dropout == -1.0f || (o->dropout >= 0.0f && o->dropout < 1.0f)))
        fatal("--dropout must be in [0, 1) (or -1: the preset's), got %g", (double)o->dropout);
}

TextOptions lm_text_options(const LmOptions *o) {
    return (TextOptions){.tokenizer = strcmp(o->tokenizer, "basic_english") == 0
                                          ? TEXT_TOKENS_BASIC_ENGLISH
                                          : TEXT_TOKENS_WORDS};
}

TransformerConfig lm_model_config(const LmOptions *o, const char *preset, int vocab) {
    TransformerConfig m = strcmp(preset, "seed") == 0            ? transformer_config_seed(vocab)
                          : strcmp(preset, "pipeline-seed") == 0 ? transformer_config_pipeline_seed(vocab)
                                                                 : transformer_config_tutorial(vocab);
    if (o->d_model) m.d_model = o->d_model;
    if (o->heads) m.heads = o->heads;
    if (o->d_hid) m.d_ff = o->d_hid;
    if (o->layers) m.layers = o->layers;
    if (o->dropout >= 0.0f) m.dropout = o->dropout;
    if (o->bptt > m.max_len) m.max_len = o->bptt;
    transformer_config_check(&m);
    return m;
}

int64_t lm_full_batches(const TextBatches *split, int bptt) { return (split->rows - 1) / bptt; }

void lm_load_text(const LmOptions *o, const char *dataset, const char *data, int batch_size,
                  TextCorpus *corpus, TextBatches *train, TextBatches *valid) {
    const TextOptions topt = lm_text_options(o);
    text_load(dataset, data, &topt, corpus);
    text_batchify(&corpus->train, batch_size, "train", train);
    text_batchify(&corpus->valid, batch_size, "valid", valid);
    if (lm_full_batches(train, o->bptt) < 1)
        fatal("%s's training text has %lld rows of %d columns: fewer than --bptt %d + 1; a "
              "smaller --bptt or --batch-size", corpus->name, (long long)train->rows, batch_size,
              o->bptt);
    print0("data: %s, %d words; %lld train and %lld valid tokens\n", corpus->name,
           corpus->vocab.count, (long long)corpus->train.count, (long long)corpus->valid.count);
    if (lm_full_batches(valid, o->bptt) < 1) /* say so rather than print nan */
        print0("note: the valid text (%lld tokens) holds no full batch of %d x %d tokens: its loss "
               "will read nan (a longer text, or a smaller --batch-size or --bptt)\n",
               (long long)(valid->rows * valid->cols), batch_size, o->bptt + 1);
}
