#!/usr/bin/python3
"""Reference values for PPO's losses, distributions and GAE in tests/unit/test_ppo.c,
from PyTorch itself (autograd, torch.distributions), written as CleanRL's ppo.py and
ppo_continuous_action.py compute them:

    /usr/bin/python3 tests/reference/make_ppo_reference.py > tests/reference/ppo_reference.h

- a categorical policy (12 samples, 3 actions): log-probabilities, entropies, the
  clipped surrogate, the clipped value loss, approx_kl, old_approx_kl, clip fraction, and
  the gradients of loss = pg - 0.01 * entropy + 0.5 * v_loss with respect to the logits
  and the values; the old log-probabilities and values are chosen so that some ratios
  and values fall outside the clip range (0.2) on both sides;
- the same without value clipping;
- a diagonal Gaussian policy (12 samples, 2 components, one log std each): log-probs,
  entropy, and the gradients of pg - 0.01 * entropy with respect to the means and log std;
- advantage normalisation, (A - mean) / (std + 1e-8) with torch.std (n - 1);
- GAE over 6 steps of 3 environments with terminations and truncations, as the bench's
  PyTorch script does it: a truncated step's reward gets gamma * V(its last observation)
  added, then every ended step cuts the chain (CleanRL's loop with dones = ended).
"""
import os
import sys

import torch
from torch.distributions import Categorical, Normal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_clip_reference import c_float, c_floats  # noqa: E402  (C literals of floats)

N, A, D = 12, 3, 2
CLIP, ENT, VF = 0.2, 0.01, 0.5
T, E = 6, 3
GAMMA, LAMBDA = 0.99, 0.95


def emit(name, t):
    values = t.detach().reshape(-1).tolist() if torch.is_tensor(t) else list(t)
    sys.stdout.write("static const float %s[%d] = %s;\n" % (name, len(values), c_floats(values)))


def scalar(name, v):
    sys.stdout.write("static const float %s = %s;\n" % (name, c_float(float(v))))


def ppo_terms(newlogprob, oldlogprob, adv, newvalue, oldvalue, returns, clip_vloss):
    logratio = newlogprob - oldlogprob
    ratio = logratio.exp()
    old_approx_kl = (-logratio).mean()
    approx_kl = ((ratio - 1) - logratio).mean()
    clipfrac = ((ratio - 1.0).abs() > CLIP).float().mean()
    pg_loss = torch.max(-adv * ratio, -adv * torch.clamp(ratio, 1 - CLIP, 1 + CLIP)).mean()
    if clip_vloss:
        v_clipped = oldvalue + torch.clamp(newvalue - oldvalue, -CLIP, CLIP)
        v_loss = 0.5 * torch.max((newvalue - returns) ** 2, (v_clipped - returns) ** 2).mean()
    else:
        v_loss = 0.5 * ((newvalue - returns) ** 2).mean()
    return pg_loss, v_loss, approx_kl, old_approx_kl, clipfrac


def categorical_case(g, clip_vloss, prefix):
    logits = torch.randn(N, A, generator=g).requires_grad_()
    actions = torch.randint(0, A, (N,), generator=g)
    dist = Categorical(logits=logits)
    logp = dist.log_prob(actions)
    # old log-probs so that the ratios spread over 0.6 .. 1.5: some clipped either way
    shift = torch.linspace(-0.5, 0.4, N)[torch.randperm(N, generator=g)]
    old_logp = (logp + shift).detach()
    adv = torch.randn(N, generator=g)
    values = torch.randn(N, generator=g).requires_grad_()
    move = torch.linspace(-0.45, 0.45, N)[torch.randperm(N, generator=g)]
    old_values = (values - move).detach()
    returns = torch.randn(N, generator=g) * 2
    entropy = dist.entropy()
    pg, vl, kl, okl, cf = ppo_terms(logp, old_logp, adv, values, old_values, returns, clip_vloss)
    loss = pg - ENT * entropy.mean() + VF * vl
    loss.backward()
    if clip_vloss:  # the inputs once; the second case reuses them
        emit(prefix + "_LOGITS", logits)
        emit(prefix + "_ACTIONS", actions.float())
        emit(prefix + "_OLD_LOGP", old_logp)
        emit(prefix + "_ADV", adv)
        emit(prefix + "_VALUES", values)
        emit(prefix + "_OLD_VALUES", old_values)
        emit(prefix + "_RETURNS", returns)
        emit(prefix + "_LOGP", logp)
        emit(prefix + "_ENTROPY", entropy)
        scalar(prefix + "_PG_LOSS", pg)
        scalar(prefix + "_ENTROPY_MEAN", entropy.mean())
        scalar(prefix + "_APPROX_KL", kl)
        scalar(prefix + "_OLD_APPROX_KL", okl)
        scalar(prefix + "_CLIPFRAC", cf)
        emit(prefix + "_DLOGITS", logits.grad)
    scalar(prefix + "_V_LOSS", vl)
    emit(prefix + "_DVALUES", values.grad)


def gaussian_case(g):
    mean = torch.randn(N, D, generator=g).requires_grad_()
    logstd = torch.tensor([[-0.3, 0.2]], requires_grad=True)
    dist = Normal(mean, logstd.exp().expand_as(mean))
    actions = (mean + logstd.exp() * torch.randn(N, D, generator=g)).detach()
    logp = dist.log_prob(actions).sum(1)
    shift = torch.linspace(-0.5, 0.4, N)[torch.randperm(N, generator=g)]
    old_logp = (logp + shift).detach()
    adv = torch.randn(N, generator=g)
    entropy = dist.entropy().sum(1)
    logratio = logp - old_logp
    ratio = logratio.exp()
    pg = torch.max(-adv * ratio, -adv * torch.clamp(ratio, 1 - CLIP, 1 + CLIP)).mean()
    loss = pg - ENT * entropy.mean()
    loss.backward()
    emit("GAUSS_MEAN", mean)
    emit("GAUSS_LOGSTD", logstd)
    emit("GAUSS_ACTIONS", actions)
    emit("GAUSS_OLD_LOGP", old_logp)
    emit("GAUSS_ADV", adv)
    emit("GAUSS_LOGP", logp)
    scalar("GAUSS_ENTROPY", entropy[0])
    scalar("GAUSS_PG_LOSS", pg)
    emit("GAUSS_DMEAN", mean.grad)
    emit("GAUSS_DLOGSTD", logstd.grad)


def gae_case(g):
    rewards = torch.randn(T, E, generator=g)
    values = torch.randn(T, E, generator=g)
    final_values = torch.randn(T, E, generator=g)  # V(last observation) where an episode ended
    last_value = torch.randn(E, generator=g)       # V(observation after the rollout)
    terminated = torch.zeros(T, E)
    truncated = torch.zeros(T, E)
    terminated[1, 0] = terminated[4, 2] = terminated[5, 1] = 1
    truncated[3, 0] = truncated[2, 1] = truncated[5, 2] = 1
    truncated[4, 2] = 1  # both at once: terminated wins (no bootstrap)
    ended = torch.clamp(terminated + truncated, max=1)
    boot = rewards + GAMMA * final_values * truncated * (1 - terminated)
    adv = torch.zeros(T, E)
    last = torch.zeros(E)
    for t in reversed(range(T)):
        nextvalues = last_value if t == T - 1 else values[t + 1]
        nonterminal = 1.0 - ended[t]
        delta = boot[t] + GAMMA * nextvalues * nonterminal - values[t]
        adv[t] = last = delta + GAMMA * LAMBDA * nonterminal * last
    # the C side's next_values: the next row, V(next obs) after the last step, V(last
    # observation) where truncated, 0 where terminated
    next_values = torch.cat([values[1:], last_value.reshape(1, -1)])
    next_values = torch.where(truncated > 0, final_values, next_values)
    next_values = torch.where(terminated > 0, torch.zeros(()), next_values)
    emit("GAE_REWARDS", rewards)
    emit("GAE_VALUES", values)
    emit("GAE_NEXT_VALUES", next_values)
    emit("GAE_TERMINATED", terminated)
    emit("GAE_TRUNCATED", truncated)
    emit("GAE_ADVANTAGES", adv)
    emit("GAE_RETURNS", adv + values)


def main():
    w = sys.stdout.write
    w("/* Generated by tests/reference/make_ppo_reference.py with PyTorch %s\n"
      " * (/usr/bin/python3, Debian's python3-torch): do not edit by hand. */\n" % torch.__version__)
    w("#ifndef TESTS_REFERENCE_PPO_REFERENCE_H\n#define TESTS_REFERENCE_PPO_REFERENCE_H\n\n")
    w("enum { PPO_REF_N = %d, PPO_REF_A = %d, PPO_REF_D = %d, GAE_REF_T = %d, GAE_REF_N = %d };\n" % (N, A, D, T, E))
    w("static const float PPO_REF_CLIP = %s, PPO_REF_ENT = %s, PPO_REF_VF = %s;\n" % (
        c_float(CLIP), c_float(ENT), c_float(VF)))
    w("static const float GAE_REF_GAMMA = %s, GAE_REF_LAMBDA = %s;\n\n" % (c_float(GAMMA), c_float(LAMBDA)))
    g = torch.Generator().manual_seed(5)
    w("/* categorical policy, loss = pg - 0.01 entropy + 0.5 v_loss, value loss clipped */\n")
    categorical_case(g, True, "CAT")
    w("/* the same inputs, value loss not clipped */\n")
    categorical_case(torch.Generator().manual_seed(5), False, "CAT_NOCLIP")
    w("\n/* diagonal Gaussian policy, loss = pg - 0.01 entropy */\n")
    gaussian_case(g)
    w("\n/* advantage normalisation */\n")
    adv = torch.randn(N, generator=torch.Generator().manual_seed(6)) * 3 + 1
    emit("NORM_IN", adv)
    emit("NORM_OUT", (adv - adv.mean()) / (adv.std() + 1e-8))
    w("\n/* GAE, [T, N] row-major */\n")
    gae_case(g)
    w("\n#endif\n")


if __name__ == "__main__":
    main()
