"""numba-cuda kernels (training family): elementwise maps with math functions, shared-memory
tiled matrix multiply, a block reduction, a 2D stencil with halos, a histogram with shared
atomics, a prefix sum in shared memory and a small per-thread polynomial fit."""

import math

from numba import cuda, float32, float64, int32


def saxpy_exp(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * math.exp(x[i]) + y[i]


def sigmoid_grad(x, g, out):
    i = cuda.grid(1)
    if i < out.size:
        s = 1.0 / (1.0 + math.exp(-x[i]))
        out[i] = g[i] * s * (1.0 - s)


def matmul_tiled_f32(a, b, c):
    sa = cuda.shared.array((16, 16), float32)
    sb = cuda.shared.array((16, 16), float32)
    x, y = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    acc = float32(0.0)
    for t in range((a.shape[1] + 15) // 16):
        sa[ty, tx] = a[y, t * 16 + tx] if y < a.shape[0] and t * 16 + tx < a.shape[1] else 0.0
        sb[ty, tx] = b[t * 16 + ty, x] if x < b.shape[1] and t * 16 + ty < b.shape[0] else 0.0
        cuda.syncthreads()
        for k in range(16):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()
    if y < c.shape[0] and x < c.shape[1]:
        c[y, x] = acc


def matmul_tiled_f64(a, b, c):
    sa = cuda.shared.array((16, 16), float64)
    sb = cuda.shared.array((16, 16), float64)
    x, y = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    acc = 0.0
    for t in range((a.shape[1] + 15) // 16):
        sa[ty, tx] = a[y, t * 16 + tx] if y < a.shape[0] and t * 16 + tx < a.shape[1] else 0.0
        sb[ty, tx] = b[t * 16 + ty, x] if x < b.shape[1] and t * 16 + ty < b.shape[0] else 0.0
        cuda.syncthreads()
        for k in range(16):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()
    if y < c.shape[0] and x < c.shape[1]:
        c[y, x] = acc


def block_sum(x, out):
    s = cuda.shared.array(256, float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    k = 128
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        cuda.syncthreads()
        k //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


def laplace2d_halo(u, v):
    tile = cuda.shared.array((18, 18), float32)
    x, y = cuda.grid(2)
    tx, ty = cuda.threadIdx.x + 1, cuda.threadIdx.y + 1
    ny, nx = u.shape
    if x < nx and y < ny:
        tile[ty, tx] = u[y, x]
        if tx == 1 and x > 0:
            tile[ty, 0] = u[y, x - 1]
        if tx == 16 and x < nx - 1:
            tile[ty, 17] = u[y, x + 1]
        if ty == 1 and y > 0:
            tile[0, tx] = u[y - 1, x]
        if ty == 16 and y < ny - 1:
            tile[17, tx] = u[y + 1, x]
    cuda.syncthreads()
    if 0 < x < nx - 1 and 0 < y < ny - 1:
        v[y, x] = tile[ty - 1, tx] + tile[ty + 1, tx] + tile[ty, tx - 1] + tile[ty, tx + 1] - 4.0 * tile[ty, tx]


def shared_histogram(data, bins):
    h = cuda.shared.array(64, int32)
    t = cuda.threadIdx.x
    if t < 64:
        h[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < data.size:
        cuda.atomic.add(h, data[i] % 64, 1)
    cuda.syncthreads()
    if t < 64:
        cuda.atomic.add(bins, t, h[t])


def scan_block(x, out):
    s = cuda.shared.array(512, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    d = 1
    while d < 512:
        v = s[t - d] if t >= d else 0.0
        cuda.syncthreads()
        s[t] += v
        cuda.syncthreads()
        d *= 2
    if i < out.size:
        out[i] = s[t]


def poly_fit3(xs, ys, coef):
    i = cuda.grid(1)
    if i >= coef.shape[0]:
        return
    sx = sx2 = sx3 = sx4 = sy = sxy = sx2y = 0.0
    n = xs.shape[1]
    for j in range(n):
        x = xs[i, j]
        y = ys[i, j]
        x2 = x * x
        sx += x
        sx2 += x2
        sx3 += x2 * x
        sx4 += x2 * x2
        sy += y
        sxy += x * y
        sx2y += x2 * y
    det = n * (sx2 * sx4 - sx3 * sx3) - sx * (sx * sx4 - sx3 * sx2) + sx2 * (sx * sx3 - sx2 * sx2)
    coef[i, 0] = (sy * (sx2 * sx4 - sx3 * sx3) - sx * (sxy * sx4 - sx3 * sx2y) + sx2 * (sxy * sx3 - sx2 * sx2y)) / det
    coef[i, 1] = (n * (sxy * sx4 - sx3 * sx2y) - sy * (sx * sx4 - sx3 * sx2) + sx2 * (sx * sx2y - sxy * sx2)) / det
    coef[i, 2] = (n * (sx2 * sx2y - sxy * sx3) - sx * (sx * sx2y - sxy * sx2) + sy * (sx * sx3 - sx2 * sx2)) / det


CORPUS = [
    ("saxpy_exp_f32", saxpy_exp, "void(float32, float32[:], float32[:], float32[:])"),
    ("saxpy_exp_f64", saxpy_exp, "void(float64, float64[:], float64[:], float64[:])"),
    ("sigmoid_grad_f32", sigmoid_grad, "void(float32[:], float32[:], float32[:])"),
    ("sigmoid_grad_f64", sigmoid_grad, "void(float64[:], float64[:], float64[:])"),
    ("matmul_tiled_f32", matmul_tiled_f32, "void(float32[:, :], float32[:, :], float32[:, :])"),
    ("matmul_tiled_f64", matmul_tiled_f64, "void(float64[:, :], float64[:, :], float64[:, :])"),
    ("block_sum_f32", block_sum, "void(float32[:], float32[:])"),
    ("laplace2d_halo_f32", laplace2d_halo, "void(float32[:, :], float32[:, :])"),
    ("shared_histogram_i32", shared_histogram, "void(int32[:], int32[:])"),
    ("shared_histogram_i64", shared_histogram, "void(int64[:], int32[:])"),
    ("scan_block_f32", scan_block, "void(float32[:], float32[:])"),
    ("poly_fit3_f32", poly_fit3, "void(float32[:, :], float32[:, :], float32[:, :])"),
    ("poly_fit3_f64", poly_fit3, "void(float64[:, :], float64[:, :], float64[:, :])"),
]
