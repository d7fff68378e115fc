#include "lm_options.h"

#include <string.h>

#include "core/check.h"

LmOptions lm_options_defaults(void) {
    return (LmOptions){.tokenizer = "words", .dropout = -1.0f, .bptt = 35};
}

int lm_options_specs(LmOptions *o, ArgSpec *specs) {
    const ArgSpec shared[LM_OPTION_SPECS] = {
        {"tokenizer", ARG_CHOICE, &o->tokenizer, "words: word_language_model's (with <eos>); basic_english: the tutorial's torchtext one", "words|basic_english"},
        {"d-model", ARG_INT, &o->d_model, "model width (0: the preset's)", NULL},
        {"heads", ARG_INT, &o->heads, "attention heads (0: the preset's)", NULL},
        {"d-hid", ARG_INT, &o->d_hid, "feed-forward width (0: the preset's)", NULL},
        {"layers", ARG_INT, &o->layers, "encoder layers (0: the preset's)", NULL},
        {"dropout", ARG_FLOAT, &o->dropout, "dropout probability (-1: the preset's)", NULL},
        {"bptt", ARG_INT, &o->bptt, "tokens per sequence (get_batch)", NULL},
    };
    for (int i = 0; i < LM_OPTION_SPECS; i++) specs[i] = shared[i];
    return LM_OPTION_SPECS;
}

void lm_options_check(const LmOptions *o) {
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
