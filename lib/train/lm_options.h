/* The command-line options of the transformer language model that lessons 04 and 06
 * share: its size, dropout, the tokens per sequence (bptt) and the tokenizer.
 *
 *   LmOptions lm = lm_options_defaults();
 *   ArgSpec specs[LM_OPTION_SPECS + ...];
 *   int n = lm_options_specs(&lm, specs);
 *   ... args_parse(argc, argv, specs, n, ...);
 *   lm_options_check(&lm);
 *   TextCorpus corpus;
 *   TextOptions topt = lm_text_options(&lm);
 *   text_load("auto", NULL, &topt, &corpus);
 *   TransformerConfig cfg = lm_model_config(&lm, "tutorial", corpus.vocab.count);
 *
 * Each program keeps its own --dataset, --batch-size, --epochs, --lr, ...: those mean
 * different things in different lessons. */
#ifndef TRAIN_LM_OPTIONS_H
#define TRAIN_LM_OPTIONS_H

#include "core/args.h"
#include "data/text.h"
#include "models/transformer.h"

enum { LM_OPTION_SPECS = 7 };

typedef struct {
    const char *tokenizer;          /* words | basic_english */
    int d_model, heads, d_hid, layers; /* 0: the preset's */
    float dropout;                  /* -1: the preset's */
    int bptt;                       /* tokens per sequence */
} LmOptions;

/* words tokenizer, the preset's sizes and dropout, bptt 35 (the tutorial's). */
LmOptions lm_options_defaults(void);
/* Writes the LM_OPTION_SPECS shared options into specs; returns their count:
 * --tokenizer, --d-model, --heads, --d-hid, --layers, --dropout, --bptt. */
int lm_options_specs(LmOptions *o, ArgSpec *specs);
/* A value out of range is a user error (exit 1) that names the option. */
void lm_options_check(const LmOptions *o);
/* text_load's options for the chosen tokenizer. */
TextOptions lm_text_options(const LmOptions *o);
/* The preset ("tutorial", "seed" or lesson 07's "pipeline-seed") for a vocabulary of `vocab` words with the
 * options' sizes in place of the preset's where given; max_len at least bptt;
 * checked (transformer_config_check). */
TransformerConfig lm_model_config(const LmOptions *o, const char *preset, int vocab);

/* Batches of --bptt tokens a split holds whole (the model is built for that length). */
int64_t lm_full_batches(const TextBatches *split, int bptt);
/* The text of --dataset/--data read (every rank reads it), its train and valid splits
 * batchified into batch_size columns, and "data: NAME, V words; ... tokens" printed on
 * rank 0; a training split without one full batch is a user error naming --bptt and
 * --batch-size, a valid split without one is a note (its loss would read nan). */
void lm_load_text(const LmOptions *o, const char *dataset, const char *data, int batch_size,
                  TextCorpus *corpus, TextBatches *train, TextBatches *valid);

#endif
