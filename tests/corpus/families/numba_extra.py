"""Extra numba-cuda kernels (held-out family, added with prediction model 6 so that numba's
held-out set is not thin): a logistic-map iteration, a 3x3 convolution, a shared-memory block
scan, a matrix-vector row dot, an atomic histogram, polar to Cartesian, gamma correction, a
pairwise distance tile, a three-pass row softmax, a 5-point Laplacian and Horner's rule."""

import math

from numba import cuda, float32, int32


def logistic_map(x, r, steps):
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    v = x[i]
    for _ in range(steps):
        v = r * v * (1 - v)
    x[i] = v


def conv3x3(src, dst, w):
    x, y = cuda.grid(2)
    if x < 1 or y < 1 or x >= src.shape[1] - 1 or y >= src.shape[0] - 1:
        return
    acc = 0.0
    for dy in range(3):
        for dx in range(3):
            acc += w[dy, dx] * src[y + dy - 1, x + dx - 1]
    dst[y, x] = acc


def block_scan(a, out):
    tile = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = a[i] if i < a.shape[0] else 0
    cuda.syncthreads()
    step = 1
    while step < 256:
        v = tile[t - step] if t >= step else 0
        cuda.syncthreads()
        tile[t] += v
        cuda.syncthreads()
        step *= 2
    if i < a.shape[0]:
        out[i] = tile[t]


def matvec_rows(m, v, out):
    i = cuda.grid(1)
    if i >= m.shape[0]:
        return
    s = 0.0
    for j in range(m.shape[1]):
        s += m[i, j] * v[j]
    out[i] = s


def histogram_atomic(data, bins, lo, hi):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = bins.shape[0]
    while i < data.shape[0]:
        b = int32((data[i] - lo) / (hi - lo) * n)
        if 0 <= b < n:
            cuda.atomic.add(bins, b, 1)
        i += stride


def polar_to_cartesian(r, theta, x, y):
    i = cuda.grid(1)
    if i < r.shape[0]:
        x[i] = r[i] * math.cos(theta[i])
        y[i] = r[i] * math.sin(theta[i])


def gamma_correct(img, out, g):
    x, y = cuda.grid(2)
    if x < img.shape[1] and y < img.shape[0]:
        out[y, x] = math.pow(img[y, x] / 255.0, g) * 255.0


def pairwise_dist(a, b, out):
    i, j = cuda.grid(2)
    if i >= a.shape[0] or j >= b.shape[0]:
        return
    s = 0.0
    for d in range(a.shape[1]):
        t = a[i, d] - b[j, d]
        s += t * t
    out[i, j] = math.sqrt(s)


def softmax_rows(x, out):
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    m = x[i, 0]
    for j in range(1, x.shape[1]):
        m = max(m, x[i, j])
    s = 0.0
    for j in range(x.shape[1]):
        s += math.exp(x[i, j] - m)
    for j in range(x.shape[1]):
        out[i, j] = math.exp(x[i, j] - m) / s


def laplacian5(u, out, inv_h2):
    x, y = cuda.grid(2)
    if x < 1 or y < 1 or x >= u.shape[1] - 1 or y >= u.shape[0] - 1:
        return
    out[y, x] = (u[y, x - 1] + u[y, x + 1] + u[y - 1, x] + u[y + 1, x] - 4 * u[y, x]) * inv_h2


def horner7(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[i] = ((((((0.5 * v - 1.25) * v + 2.0) * v - 0.75) * v + 3.5) * v - 1.0) * v + 0.25)


CORPUS = [
    ("logistic_map_f32", logistic_map, "void(float32[:], float32, int32)"),
    ("logistic_map_f64", logistic_map, "void(float64[:], float64, int32)"),
    ("conv3x3_f32", conv3x3, "void(float32[:, :], float32[:, :], float32[:, :])"),
    ("conv3x3_f64", conv3x3, "void(float64[:, :], float64[:, :], float64[:, :])"),
    ("block_scan_f32", block_scan, "void(float32[:], float32[:])"),
    ("matvec_rows_f32", matvec_rows, "void(float32[:, :], float32[:], float32[:])"),
    ("matvec_rows_f64", matvec_rows, "void(float64[:, :], float64[:], float64[:])"),
    ("histogram_atomic_f32", histogram_atomic, "void(float32[:], int32[:], float32, float32)"),
    ("polar_to_cartesian_f32", polar_to_cartesian, "void(float32[:], float32[:], float32[:], float32[:])"),
    ("polar_to_cartesian_f64", polar_to_cartesian, "void(float64[:], float64[:], float64[:], float64[:])"),
    ("gamma_correct_u8", gamma_correct, "void(uint8[:, :], float32[:, :], float32)"),
    ("pairwise_dist_f32", pairwise_dist, "void(float32[:, :], float32[:, :], float32[:, :])"),
    ("pairwise_dist_f64", pairwise_dist, "void(float64[:, :], float64[:, :], float64[:, :])"),
    ("softmax_rows_f32", softmax_rows, "void(float32[:, :], float32[:, :])"),
    ("laplacian5_f32", laplacian5, "void(float32[:, :], float32[:, :], float32)"),
    ("laplacian5_f64", laplacian5, "void(float64[:, :], float64[:, :], float64)"),
    ("horner7_f32", horner7, "void(float32[:], float32[:])"),
    ("horner7_f64", horner7, "void(float64[:], float64[:])"),
]
