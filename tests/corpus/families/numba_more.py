"""More numba-cuda kernels (held-out family): a particle update with periodic boundaries, a
bilinear image resize, a SOR sweep, a cosine-similarity row kernel, a k-means assignment
step, a 1D wavelet step, an RK4 integrator step, a bitonic step and small elementwise kernels."""

import math

from numba import cuda


def particle_push(x, v, f, dt, box):
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    for d in range(3):
        v[i, d] += f[i, d] * dt
        p = x[i, d] + v[i, d] * dt
        if p < 0:
            p += box
        elif p >= box:
            p -= box
        x[i, d] = p


def resize_bilinear(src, dst):
    x, y = cuda.grid(2)
    h, w = dst.shape
    if x >= w or y >= h:
        return
    sy = (y + 0.5) * src.shape[0] / h - 0.5
    sx = (x + 0.5) * src.shape[1] / w - 0.5
    y0 = max(0, min(int(math.floor(sy)), src.shape[0] - 2))  # noqa: RUF046 (numba: a float)
    x0 = max(0, min(int(math.floor(sx)), src.shape[1] - 2))  # noqa: RUF046 (numba: a float)
    fy = sy - y0
    fx = sx - x0
    top = src[y0, x0] * (1 - fx) + src[y0, x0 + 1] * fx
    bot = src[y0 + 1, x0] * (1 - fx) + src[y0 + 1, x0 + 1] * fx
    dst[y, x] = top * (1 - fy) + bot * fy


def sor_sweep(u, f, omega, h2, color):
    x, y = cuda.grid(2)
    if x < 1 or y < 1 or x >= u.shape[1] - 1 or y >= u.shape[0] - 1 or (x + y) % 2 != color:
        return
    g = 0.25 * (u[y - 1, x] + u[y + 1, x] + u[y, x - 1] + u[y, x + 1] - h2 * f[y, x])
    u[y, x] = (1 - omega) * u[y, x] + omega * g


def cosine_rows(a, b, out):
    i = cuda.grid(1)
    if i >= a.shape[0]:
        return
    dot = na = nb = 0.0
    for j in range(a.shape[1]):
        dot += a[i, j] * b[i, j]
        na += a[i, j] * a[i, j]
        nb += b[i, j] * b[i, j]
    out[i] = dot / math.sqrt(na * nb + 1e-12)


def kmeans_assign(pts, centers, label):
    i = cuda.grid(1)
    if i >= pts.shape[0]:
        return
    best = 1e30
    arg = -1
    for c in range(centers.shape[0]):
        d = 0.0
        for k in range(pts.shape[1]):
            t = pts[i, k] - centers[c, k]
            d += t * t
        if d < best:
            best = d
            arg = c
    label[i] = arg


def haar_step(x, lo, hi):
    i = cuda.grid(1)
    if 2 * i + 1 < x.size:
        a = x[2 * i]
        b = x[2 * i + 1]
        lo[i] = (a + b) * 0.7071067811865476
        hi[i] = (a - b) * 0.7071067811865476


def rk4_oscillator(y, v, k, dt, steps):
    i = cuda.grid(1)
    if i >= y.size:
        return
    yy = y[i]
    vv = v[i]
    kk = k[i]
    for _ in range(steps):
        k1y, k1v = vv, -kk * yy
        k2y, k2v = vv + 0.5 * dt * k1v, -kk * (yy + 0.5 * dt * k1y)
        k3y, k3v = vv + 0.5 * dt * k2v, -kk * (yy + 0.5 * dt * k2y)
        k4y, k4v = vv + dt * k3v, -kk * (yy + dt * k3y)
        yy += dt / 6.0 * (k1y + 2 * k2y + 2 * k3y + k4y)
        vv += dt / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v)
    y[i] = yy
    v[i] = vv


def bitonic_step(a, j, k):
    i = cuda.grid(1)
    l = i ^ j
    if l > i and l < a.size:
        up = (i & k) == 0
        x = a[i]
        y = a[l]
        if (x > y) == up:
            a[i] = y
            a[l] = x


def abs_diff(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = abs(a[i] - b[i])


def where_clip(a, lo, hi, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = max(lo, min(a[i], hi))


CORPUS = [
    ("particle_push_f32", particle_push, "void(float32[:, :], float32[:, :], float32[:, :], float32, float32)"),
    ("particle_push_f64", particle_push, "void(float64[:, :], float64[:, :], float64[:, :], float64, float64)"),
    ("resize_bilinear_f32", resize_bilinear, "void(float32[:, :], float32[:, :])"),
    ("resize_bilinear_u8", resize_bilinear, "void(uint8[:, :], float32[:, :])"),
    ("sor_sweep_f32", sor_sweep, "void(float32[:, :], float32[:, :], float32, float32, int32)"),
    ("sor_sweep_f64", sor_sweep, "void(float64[:, :], float64[:, :], float64, float64, int32)"),
    ("cosine_rows_f32", cosine_rows, "void(float32[:, :], float32[:, :], float32[:])"),
    ("kmeans_assign_f32", kmeans_assign, "void(float32[:, :], float32[:, :], int32[:])"),
    ("kmeans_assign_f64", kmeans_assign, "void(float64[:, :], float64[:, :], int32[:])"),
    ("haar_step_f32", haar_step, "void(float32[:], float32[:], float32[:])"),
    ("haar_step_f64", haar_step, "void(float64[:], float64[:], float64[:])"),
    ("rk4_oscillator_f32", rk4_oscillator, "void(float32[:], float32[:], float32[:], float32, int32)"),
    ("rk4_oscillator_f64", rk4_oscillator, "void(float64[:], float64[:], float64[:], float64, int32)"),
    ("bitonic_step_i32", bitonic_step, "void(int32[:], int32, int32)"),
    ("bitonic_step_f32", bitonic_step, "void(float32[:], int32, int32)"),
    ("abs_diff_f32", abs_diff, "void(float32[:], float32[:], float32[:])"),
    ("where_clip_f32", where_clip, "void(float32[:], float32, float32, float32[:])"),
    ("where_clip_i32", where_clip, "void(int32[:], int32, int32, int32[:])"),
]
