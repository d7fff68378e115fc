"""PPO on CartPole-v1 in PyTorch, written the way CleanRL's ppo.py is (one file, the
same defaults and details), for `make bench-ppo` to time against lesson 05's C program.

Gymnasium is not installable here, so CartPole-v1 is written out below with Gymnasium's
formulas, time limit and auto-reset (the same step as gym 0.26's vector envs: a finished
episode resets at once and its last observation is kept). One detail differs from
ppo.py, on purpose and as in the C program: a truncated episode (500 steps) is
bootstrapped with the critic's value of its last observation instead of being treated
as a failure (docs/rl.md, "Truncation").

Prints one JSON object: the seed, whether and when (environment steps, seconds since the
start of training) the mean return of the last 20 episodes first reached the target
(checked after each update), and where the time went. Usage:
    python3 pytorch_ppo.py --seed 1 [--threads 1] [--target-return 475] [--steps 500000]
    python3 pytorch_ppo.py --env-only 2        # environment steps/s alone
"""
import argparse
import json
import math
import time

import numpy as np
import torch
from torch import nn
from torch.distributions.categorical import Categorical


class CartPole:
    """CartPole-v1 as Gymnasium computes it (state in Python floats, float32 observations)."""

    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    total_mass = masspole + masscart
    polemass_length = masspole * length
    theta_threshold = 12 * 2 * math.pi / 360
    x_threshold = 2.4
    max_steps = 500

    def __init__(self, rng):
        self.rng = rng
        self.state = None
        self.steps = 0

    def reset(self):
        self.state = [float(v) for v in self.rng.uniform(-0.05, 0.05, size=(4,))]
        self.steps = 0
        return np.array(self.state, dtype=np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + self.polemass_length * theta_dot**2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta**2 / self.total_mass))
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * xacc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * thetaacc
        self.state = [x, x_dot, theta, theta_dot]
        self.steps += 1
        terminated = not (-self.x_threshold <= x <= self.x_threshold
                          and -self.theta_threshold <= theta <= self.theta_threshold)
        truncated = self.steps >= self.max_steps
        return np.array(self.state, dtype=np.float32), 1.0, terminated, truncated


class VecEnv:
    """N copies stepped in turn, reset in the same step, with episode statistics."""

    def __init__(self, n, seed):
        self.envs = [CartPole(np.random.default_rng(seed + i)) for i in range(n)]
        self.returns = np.zeros(n)
        self.lengths = np.zeros(n, dtype=np.int64)
        self.finished = []  # returns of finished episodes, oldest first

    def reset(self):
        return np.stack([e.reset() for e in self.envs])

    def step(self, actions):
        n = len(self.envs)
        obs = np.empty((n, 4), dtype=np.float32)
        rewards = np.empty(n, dtype=np.float32)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        final_obs = {}
        for i, (env, a) in enumerate(zip(self.envs, actions)):
            o, r, term, trunc = env.step(int(a))
            self.returns[i] += r
            self.lengths[i] += 1
            if term or trunc:
                final_obs[i] = o
                self.finished.append(self.returns[i])
                self.returns[i], self.lengths[i] = 0.0, 0
                o = env.reset()
            obs[i], rewards[i], terminated[i], truncated[i] = o, r, term, trunc
        return obs, rewards, terminated, truncated, final_obs


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim, num_actions, hidden=64):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0))
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, num_actions), std=0.01))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        probs = Categorical(logits=self.actor(x))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def env_steps_per_s(n, seconds):
    envs = VecEnv(n, 1)
    envs.reset()
    actions = np.random.default_rng(1).integers(0, 2, size=(1000, n))
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for a in actions:
            envs.step(a)
        steps += 1000 * n
    return steps / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=500000)
    ap.add_argument("--target-return", type=float, default=475.0)
    ap.add_argument("--num-envs", type=int, default=4)
    ap.add_argument("--num-steps", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2.5e-4)
    ap.add_argument("--gamma", type=float, default=0.99)
    ap.add_argument("--gae-lambda", type=float, default=0.95)
    ap.add_argument("--num-minibatches", type=int, default=4)
    ap.add_argument("--update-epochs", type=int, default=4)
    ap.add_argument("--clip-coef", type=float, default=0.2)
    ap.add_argument("--ent-coef", type=float, default=0.01)
    ap.add_argument("--vf-coef", type=float, default=0.5)
    ap.add_argument("--max-grad-norm", type=float, default=0.5)
    ap.add_argument("--env-only", type=float, metavar="SECONDS",
                    help="only step 4 CartPoles with random actions for SECONDS and print the steps/s")
    args = ap.parse_args()
    if args.env_only:
        print(json.dumps({"impl": "python", "env_steps_per_s": env_steps_per_s(args.num_envs, args.env_only)}))
        return

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    n, T = args.num_envs, args.num_steps
    batch = n * T
    minibatch = batch // args.num_minibatches
    num_updates = args.steps // batch
    envs = VecEnv(n, args.seed)
    agent = Agent(4, 2)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)

    obs = torch.zeros((T, n, 4))
    actions = torch.zeros((T, n))
    logprobs = torch.zeros((T, n))
    rewards = torch.zeros((T, n))
    dones = torch.zeros((T, n))
    values = torch.zeros((T, n))

    time_env = time_forward = time_update = 0.0
    start = time.perf_counter()
    next_obs = torch.tensor(envs.reset())
    global_step = 0
    reached = None
    for update in range(num_updates):
        optimizer.param_groups[0]["lr"] = (1.0 - update / num_updates) * args.lr
        for step in range(T):
            global_step += n
            obs[step] = next_obs
            t0 = time.perf_counter()
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            t1 = time.perf_counter()
            o, r, term, trunc, final_obs = envs.step(action.numpy())
            t2 = time.perf_counter()
            r = torch.tensor(r)
            for i in np.nonzero(trunc & ~term)[0]:  # bootstrap a truncated episode
                with torch.no_grad():
                    r[i] += args.gamma * agent.get_value(torch.tensor(final_obs[i])).item()
            rewards[step] = r
            dones[step] = torch.tensor(term | trunc, dtype=torch.float32)
            next_obs = torch.tensor(o)
            time_forward += (t1 - t0) + (time.perf_counter() - t2)
            time_env += t2 - t1

        t0 = time.perf_counter()
        with torch.no_grad():  # GAE; dones[t] ends the chain after step t
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(T)):
                nextvalues = next_value if t == T - 1 else values[t + 1]
                nonterminal = 1.0 - dones[t]
                delta = rewards[t] + args.gamma * nextvalues * nonterminal - values[t]
                advantages[t] = lastgaelam = delta + args.gamma * args.gae_lambda * nonterminal * lastgaelam
            returns = advantages + values

        b_obs, b_logprobs, b_actions = obs.reshape(-1, 4), logprobs.reshape(-1), actions.reshape(-1)
        b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
        b_inds = np.arange(batch)
        for epoch in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for s in range(0, batch, minibatch):
                mb = b_inds[s:s + minibatch]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions.long()[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                adv = b_advantages[mb]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                pg_loss = torch.max(-adv * ratio,
                                    -adv * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
                newvalue = newvalue.view(-1)
                v_clipped = b_values[mb] + torch.clamp(newvalue - b_values[mb], -args.clip_coef, args.clip_coef)
                v_loss = 0.5 * torch.max((newvalue - b_returns[mb]) ** 2, (v_clipped - b_returns[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        time_update += time.perf_counter() - t0

        last20 = envs.finished[-20:]  # checked after each update, as the C program does
        if last20 and np.mean(last20) >= args.target_return:
            reached = {"steps": global_step, "seconds": time.perf_counter() - start}
            break

    total = time.perf_counter() - start
    print(json.dumps({
        "impl": "pytorch", "version": torch.__version__, "threads": args.threads, "seed": args.seed,
        "reached": reached is not None, "steps_to_target": reached["steps"] if reached else None,
        "seconds_to_target": reached["seconds"] if reached else None,
        "steps": global_step, "wall_s": total, "steps_per_s": global_step / total,
        "env_s": time_env, "forward_s": time_forward, "update_s": time_update}))


if __name__ == "__main__":
    main()
