#!/usr/bin/python3
"""Reference transitions for tests/unit/test_rl.c, computed from Gymnasium's formulas.

Gymnasium cannot be installed here, so this script writes its classic-control dynamics
out again in Python (double precision, the C library's sin and cos through the math
module, NumPy only for float32 rounding) and records, step by step, the state, the
float32 observation, the reward and the termination flag:

    /usr/bin/python3 tests/reference/make_rl_reference.py > tests/reference/rl_reference.h

The formulas follow gymnasium/envs/classic_control/{cartpole,acrobot,pendulum}.py
(Gymnasium 1.x) operation for operation, so C code that does the same arithmetic matches
them exactly. Each case starts from a state written below and takes the actions written
below; a few cases start where a rule must fire (termination, the velocity bounds, the
angle wrap, torque clipping).

It also draws the first states after a reset from the toolkit's PCG32 (lib/core/rng.c,
written out again below) the way lib/rl/env.c does (NumPy's 53-bit doubles), which
checks the reset distributions and the seeding, and LunarLander-v3's terrain for a seed.
"""
import math
import sys

import numpy as np

F32 = np.float32
RL_ENV_STREAM = 0x454E5600
MASK64 = (1 << 64) - 1


# ------------------------------------------------------------------ PCG32, as lib/core/rng.c
class Pcg32:
    def __init__(self, seed, stream):
        self.state = 0
        self.inc = ((stream << 1) | 1) & MASK64
        self.u32()
        self.state = (self.state + seed) & MASK64
        self.u32()

    def u32(self):
        old = self.state
        self.state = (old * 6364136223846793005 + self.inc) & MASK64
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & 0xFFFFFFFF

    def uniform(self, lo, hi):
        """NumPy's Generator.uniform: lo + (hi - lo) * next_double, 27 + 26 bits."""
        a = self.u32() >> 5
        b = self.u32() >> 6
        u = (a * 67108864.0 + b) / 9007199254740992.0
        return lo + (hi - lo) * u


# ------------------------------------------------------------------ CartPole-v1
GRAVITY, MASSCART, MASSPOLE, LENGTH = 9.8, 1.0, 0.1, 0.5
TOTAL_MASS = MASSPOLE + MASSCART
POLEMASS_LENGTH = MASSPOLE * LENGTH
FORCE_MAG, TAU = 10.0, 0.02
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4


def cartpole_step(state, steps_beyond, action):
    x, x_dot, theta, theta_dot = state
    force = FORCE_MAG if action == 1 else -FORCE_MAG
    costheta = math.cos(theta)
    sintheta = math.sin(theta)
    temp = (force + POLEMASS_LENGTH * theta_dot**2 * sintheta) / TOTAL_MASS
    thetaacc = (GRAVITY * sintheta - costheta * temp) / (
        LENGTH * (4.0 / 3.0 - MASSPOLE * costheta**2 / TOTAL_MASS))
    xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
    x = x + TAU * x_dot
    x_dot = x_dot + TAU * xacc
    theta = theta + TAU * theta_dot
    theta_dot = theta_dot + TAU * thetaacc
    state = (x, x_dot, theta, theta_dot)
    terminated = bool(x < -X_THRESHOLD or x > X_THRESHOLD
                      or theta < -THETA_THRESHOLD or theta > THETA_THRESHOLD)
    if not terminated:
        reward = 1.0
    elif steps_beyond is None:
        steps_beyond = 0
        reward = 1.0
    else:
        steps_beyond += 1
        reward = 0.0
    obs = [F32(v) for v in state]
    return state, steps_beyond, obs, reward, terminated


# ------------------------------------------------------------------ Acrobot-v1
def acrobot_dsdt(s_augmented):
    m1 = m2 = 1.0
    l1 = 1.0
    lc1 = lc2 = 0.5
    I1 = I2 = 1.0
    g = 9.8
    a = s_augmented[-1]
    theta1, theta2, dtheta1, dtheta2 = s_augmented[:-1]
    d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * math.cos(theta2)) + I1 + I2
    d2 = m2 * (lc2**2 + l1 * lc2 * math.cos(theta2)) + I2
    phi2 = m2 * lc2 * g * math.cos(theta1 + theta2 - math.pi / 2.0)
    phi1 = (-m2 * l1 * lc2 * dtheta2**2 * math.sin(theta2)
            - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * math.sin(theta2)
            + (m1 * lc1 + m2 * l1) * g * math.cos(theta1 - math.pi / 2) + phi2)
    ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * math.sin(theta2) - phi2) / (
        m2 * lc2**2 + I2 - d2**2 / d1)
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return [dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0]


def rk4(derivs, y0, t):
    """Gymnasium's rk4 for t = [0, dt], elementwise as NumPy evaluates it."""
    dt = t[1] - t[0]
    dt2 = dt / 2.0
    k1 = derivs(y0)
    k2 = derivs([y + dt2 * k for y, k in zip(y0, k1)])
    k3 = derivs([y + dt2 * k for y, k in zip(y0, k2)])
    k4 = derivs([y + dt * k for y, k in zip(y0, k3)])
    return [y + dt / 6.0 * (a + 2 * b + 2 * c + d) for y, a, b, c, d in zip(y0, k1, k2, k3, k4)][:4]


def wrap(x, m, M):
    diff = M - m
    while x > M:
        x = x - diff
    while x < m:
        x = x + diff
    return x


def bound(x, m, M):
    return min(max(x, m), M)


def acrobot_obs(s):
    return [F32(math.cos(s[0])), F32(math.sin(s[0])), F32(math.cos(s[1])), F32(math.sin(s[1])),
            F32(s[2]), F32(s[3])]


def acrobot_step(s, action):
    torque = [-1.0, 0.0, +1][action]
    ns = rk4(acrobot_dsdt, list(s) + [torque], [0, 0.2])
    ns[0] = wrap(ns[0], -math.pi, math.pi)
    ns[1] = wrap(ns[1], -math.pi, math.pi)
    ns[2] = bound(ns[2], -4 * math.pi, 4 * math.pi)
    ns[3] = bound(ns[3], -9 * math.pi, 9 * math.pi)
    terminated = bool(-math.cos(ns[0]) - math.cos(ns[1] + ns[0]) > 1.0)
    return tuple(ns), acrobot_obs(ns), (-1.0 if not terminated else 0.0), terminated


# ------------------------------------------------------------------ Pendulum-v1
def angle_normalize(x):
    return ((x + math.pi) % (2 * math.pi)) - math.pi


def pendulum_step(state, u_in):
    """u is float32 as a policy gives it; NumPy 2 keeps u**2, 0.001 * u**2 and 3.0 * u in
    float32 (NEP 50: a Python float does not widen a NumPy float32)."""
    th, thdot = state
    g, m, l, dt = 10.0, 1.0, 1.0, 0.05
    u = F32(min(max(F32(u_in), F32(-2.0)), F32(2.0)))
    costs = angle_normalize(th) ** 2 + 0.1 * thdot**2 + float(F32(0.001) * (u * u))
    newthdot = thdot + (3 * g / (2 * l) * math.sin(th) + float(F32(3.0 / (m * l**2)) * u)) * dt
    newthdot = min(max(newthdot, -8), 8)
    newth = th + newthdot * dt
    state = (newth, newthdot)
    obs = [F32(math.cos(newth)), F32(math.sin(newth)), F32(newthdot)]
    return state, obs, -costs, False


# ------------------------------------------------------------------ writing C
def c_double(v):
    return repr(float(v)) if math.isfinite(v) else ("INFINITY" if v > 0 else "-INFINITY")


def c_float(v):
    text = "%.9g" % float(v)
    if "." not in text and "e" not in text:
        text += ".0"
    return text + "f"


def emit_case(out, prefix, name, comment, state0, actions, steps, action_is_float=False):
    """steps: list of (state, obs, reward, terminated)."""
    n = len(steps)
    out.write("\n/* %s */\n" % comment)
    out.write("enum { %s_%s_STEPS = %d };\n" % (prefix, name, n))
    out.write("static const double %s_%s_STATE0[] = {%s};\n"
              % (prefix, name, ", ".join(c_double(v) for v in state0)))
    if action_is_float:
        out.write("static const float %s_%s_ACTIONS[%d] = {%s};\n"
                  % (prefix, name, n, ", ".join(c_float(a) for a in actions)))
    else:
        out.write("static const int %s_%s_ACTIONS[%d] = {%s};\n"
                  % (prefix, name, n, ", ".join(str(a) for a in actions)))
    dim = len(steps[0][0])
    odim = len(steps[0][1])
    out.write("static const double %s_%s_STATE[%d][%d] = {\n" % (prefix, name, n, dim))
    for st in steps:
        out.write("    {%s},\n" % ", ".join(c_double(v) for v in st[0]))
    out.write("};\n")
    out.write("static const float %s_%s_OBS[%d][%d] = {\n" % (prefix, name, n, odim))
    for st in steps:
        out.write("    {%s},\n" % ", ".join(c_float(v) for v in st[1]))
    out.write("};\n")
    out.write("static const double %s_%s_REWARD[%d] = {%s};\n"
              % (prefix, name, n, ", ".join(c_double(st[2]) for st in steps)))
    out.write("static const int %s_%s_TERMINATED[%d] = {%s};\n"
              % (prefix, name, n, ", ".join("1" if st[3] else "0" for st in steps)))


def pattern(n, k, seed):
    """A fixed action sequence in 0..k-1 (a small LCG, so it is written once here)."""
    out, x = [], seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) % (1 << 31)
        out.append((x >> 16) % k)
    return out


def cartpole_cases(out):
    # mixed actions from a balancing rule (every fifth one flipped), no termination
    s0 = (0.01, -0.02, 0.03, 0.04)
    s, beyond, steps, acts = s0, None, [], []
    for t in range(60):
        a = 1 if s[2] + 0.3 * s[3] + 0.01 * s[1] > 0 else 0
        if t % 5 == 4:
            a = 1 - a
        s, beyond, obs, r, term = cartpole_step(s, beyond, a)
        steps.append((s, obs, r, term))
        acts.append(a)
    assert not any(st[3] for st in steps)
    emit_case(out, "CARTPOLE", "MIXED", "CartPole-v1: 60 steps of mixed actions", s0, acts, steps)
    # always push right: the pole falls; two steps beyond it give reward 0
    s0 = (0.0, 0.0, 0.0, 0.0)
    s, beyond, steps, acts = s0, None, [], []
    while True:
        s, beyond, obs, r, term = cartpole_step(s, beyond, 1)
        steps.append((s, obs, r, term))
        acts.append(1)
        if term and beyond == 2:
            break
    emit_case(out, "CARTPOLE", "FALL",
              "CartPole-v1: always push right until the pole falls, then two steps more "
              "(reward 1 on the terminating step, 0 after it)", s0, acts, steps)
    # the cart leaves the track: x > 2.4
    s0 = (2.3, 1.5, 0.0, 0.0)
    s, beyond, steps, acts = s0, None, [], []
    while True:
        s, beyond, obs, r, term = cartpole_step(s, beyond, 1)
        steps.append((s, obs, r, term))
        acts.append(1)
        if term:
            break
    emit_case(out, "CARTPOLE", "EDGE", "CartPole-v1: the cart runs off the right end of the track",
              s0, acts, steps)


def acrobot_cases(out):
    # from a reset-like float32 state, 60 steps of mixed torques
    s0 = tuple(float(F32(v)) for v in (0.05, -0.08, 0.03, 0.09))
    acts = pattern(60, 3, 11)
    s, steps = s0, []
    for a in acts:
        s, obs, r, term = acrobot_step(s, a)
        steps.append((s, obs, r, term))
    emit_case(out, "ACROBOT", "MIXED", "Acrobot-v1: 60 steps of mixed torques from near the bottom",
              s0, acts, steps)
    # swinging up fast: reaches the line and terminates
    s0 = (1.5, 0.0, 3.0, 0.0)
    s, steps, acts = s0, [], []
    while True:
        s, obs, r, term = acrobot_step(s, 2)
        steps.append((s, obs, r, term))
        acts.append(2)
        if term:
            break
    emit_case(out, "ACROBOT", "SWING", "Acrobot-v1: a fast swing that reaches the target height",
              s0, acts, steps)
    # fast spin: the velocity bounds and the angle wrap act
    s0 = (3.0, -3.0, 12.0, 28.0)
    acts = [2, 0, 1, 2, 0, 0, 2, 1]
    s, steps = s0, []
    for a in acts:
        s, obs, r, term = acrobot_step(s, a)
        steps.append((s, obs, r, term))
    emit_case(out, "ACROBOT", "SPIN", "Acrobot-v1: a fast spin (angles wrap, velocities are bounded)",
              s0, acts, steps)


def pendulum_cases(out):
    s0 = (2.0, -0.5)
    torques = [float(F32(v)) for v in
               (0.3, -1.7, 2.0, -2.0, 3.5, -7.25, 0.0, 1.2345678, -0.001, 1.9999, 0.75, -0.6)] * 3
    s, steps = s0, []
    for u in torques:
        s, obs, r, term = pendulum_step(s, u)
        steps.append((s, obs, r, term))
    emit_case(out, "PENDULUM", "MIXED",
              "Pendulum-v1: 36 steps of torques, some outside [-2, 2] (clipped)", s0, torques, steps, True)
    s0 = (0.1, 7.9)
    torques = [2.0, 2.0, 2.0, -2.0, 2.0, 2.0]
    s, steps = s0, []
    for u in torques:
        s, obs, r, term = pendulum_step(s, u)
        steps.append((s, obs, r, term))
    emit_case(out, "PENDULUM", "FAST",
              "Pendulum-v1: near the speed limit (clipped to 8)", s0, torques, steps, True)
    s0 = (7.0, -3.0)  # more than a turn: the reward wraps the angle, the state does not
    torques = [-1.0, 0.5, 1.5, -0.25]
    s, steps = s0, []
    for u in torques:
        s, obs, r, term = pendulum_step(s, u)
        steps.append((s, obs, r, term))
    emit_case(out, "PENDULUM", "WRAP",
              "Pendulum-v1: an angle past a whole turn (the cost uses it wrapped to [-pi, pi))",
              s0, torques, steps, True)


def reset_cases(out):
    seed = 20240917
    out.write("\n/* First states after a reset of copy i of a VecEnv with seed %d (stream "
              "RL_ENV_STREAM + i), drawn as lib/rl does */\n" % seed)
    out.write("#define RL_REF_RESET_SEED %dull\n" % seed)
    rows = {"CARTPOLE": [], "ACROBOT": [], "PENDULUM": []}
    for i in range(3):
        r = Pcg32(seed, RL_ENV_STREAM + i)
        rows["CARTPOLE"].append([r.uniform(-0.05, 0.05) for _ in range(4)])
        r = Pcg32(seed, RL_ENV_STREAM + i)
        rows["ACROBOT"].append([float(F32(r.uniform(-0.1, 0.1))) for _ in range(4)])
        r = Pcg32(seed, RL_ENV_STREAM + i)
        th = r.uniform(-math.pi, math.pi)
        rows["PENDULUM"].append([th, r.uniform(-1.0, 1.0)])
    for name, vals in rows.items():
        out.write("static const double %s_RESET[3][%d] = {\n" % (name, len(vals[0])))
        for v in vals:
            out.write("    {%s},\n" % ", ".join(c_double(x) for x in v))
        out.write("};\n")
    # LunarLander-v3's terrain for copy 0
    r = Pcg32(seed, RL_ENV_STREAM)
    W, H, CHUNKS = 600 / 30.0, 400 / 30.0, 11
    height = [r.uniform(0, H / 2) for _ in range(CHUNKS + 1)]
    helipad_y = H / 4
    for k in range(-2, 3):
        height[CHUNKS // 2 + k] = helipad_y
    smooth_y = [0.33 * (height[i - 1] + height[i + 0] + height[i + 1]) for i in range(CHUNKS)]
    push = [r.uniform(-1000.0, 1000.0) for _ in range(2)]
    out.write("/* LunarLander-v3, copy 0: the terrain heights (smoothed) and the first push */\n")
    out.write("static const double LUNAR_RESET_TERRAIN_Y[%d] = {%s};\n"
              % (CHUNKS, ", ".join(c_double(v) for v in smooth_y)))
    out.write("static const double LUNAR_RESET_PUSH[2] = {%s};\n" % ", ".join(c_double(v) for v in push))


def main():
    out = sys.stdout
    out.write("/* Generated by tests/reference/make_rl_reference.py (Python %d.%d, NumPy %s):\n"
              " * do not edit by hand. Gymnasium's classic-control transitions, written out again\n"
              " * in Python double precision; observations are float32 as Gymnasium returns them. */\n"
              % (sys.version_info[0], sys.version_info[1], np.__version__))
    out.write("#ifndef TESTS_REFERENCE_RL_REFERENCE_H\n#define TESTS_REFERENCE_RL_REFERENCE_H\n")
    out.write("\n#include <math.h>\n")
    cartpole_cases(out)
    acrobot_cases(out)
    pendulum_cases(out)
    reset_cases(out)
    out.write("\n#endif\n")


if __name__ == "__main__":
    main()
