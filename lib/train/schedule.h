/* Learning-rate schedules, as functions of the epoch (or update) number, with PyTorch's
 * arithmetic:
 *
 *   step_lr:   torch.optim.lr_scheduler.StepLR: lr * gamma^(epoch / step_size) (integer
 *              division); the tutorial: lr 5.0, step_size 1, gamma 0.95.
 *   linear_lr: the linear annealing of PPO (CleanRL's anneal_lr): lr * (1 - update / total),
 *              update counted from 0; 0 at update == total.
 *
 * epoch counts from 0, as StepLR's last_epoch after `epoch` calls of scheduler.step(). */
#ifndef TRAIN_SCHEDULE_H
#define TRAIN_SCHEDULE_H

#include <stdint.h>

float step_lr(float lr, float gamma, int step_size, int64_t epoch);
float linear_lr(float lr, int64_t update, int64_t total);

#endif
