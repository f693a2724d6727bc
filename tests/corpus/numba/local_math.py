"""numba-cuda kernels with per-thread local arrays and transcendental math: a private
insertion sort, a moving-window median, a polynomial root refinement, softplus/erf mixes."""

import math

from numba import cuda, float32, float64


def private_sort8(x, out):
    i = cuda.grid(1)
    if i * 8 + 7 >= x.size:
        return
    v = cuda.local.array(8, float32)
    for k in range(8):
        v[k] = x[i * 8 + k]
    for a in range(1, 8):
        key = v[a]
        b = a - 1
        while b >= 0 and v[b] > key:
            v[b + 1] = v[b]
            b -= 1
        v[b + 1] = key
    for k in range(8):
        out[i * 8 + k] = v[k]


def window_median5(x, out):
    i = cuda.grid(1)
    if i < 2 or i >= x.size - 2:
        return
    w = cuda.local.array(5, float64)
    for k in range(5):
        w[k] = x[i + k - 2]
    for a in range(5):
        for b in range(4 - a):
            if w[b] > w[b + 1]:
                w[b], w[b + 1] = w[b + 1], w[b]
    out[i] = w[2]


def newton_cubic(c, roots, iters):
    i = cuda.grid(1)
    if i >= roots.size:
        return
    a, b, d = c[i, 0], c[i, 1], c[i, 2]
    r = 1.0
    for _ in range(iters):
        f = ((r + a) * r + b) * r + d
        df = (3.0 * r + 2.0 * a) * r + b
        r -= f / (df + 1e-12)
    roots[i] = r


def activation_mix(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i] = (math.log1p(math.exp(v)) + math.erf(v) * math.tanh(0.5 * v)
                  + math.atan2(v, 1.0) + math.cos(v) ** 2)


CORPUS = [
    ("private_sort8_f32", private_sort8, "void(float32[:], float32[:])"),
    ("window_median5_f64", window_median5, "void(float64[:], float64[:])"),
    ("newton_cubic_f64", newton_cubic, "void(float64[:, :], float64[:], int32)"),
    ("newton_cubic_f32", newton_cubic, "void(float32[:, :], float32[:], int32)"),
    ("activation_mix_f32", activation_mix, "void(float32[:], float32[:])"),
    ("activation_mix_f64", activation_mix, "void(float64[:], float64[:])"),
]
