"""numba-cuda elementwise kernels: axpy, polynomial, clipping, complex magnitude, grid-stride."""

import math

from numba import cuda


def axpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


def horner(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i] = ((((0.0083 * v + 0.0416) * v + 0.1666) * v + 0.5) * v + 1.0) * v + 1.0


def clip_grid_stride(x, lo, hi):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, x.size, stride):
        x[i] = min(max(x[i], lo), hi)


def magnitude(re, im, out):
    i = cuda.grid(1)
    if i < re.size:
        out[i] = math.sqrt(re[i] * re[i] + im[i] * im[i])


def sigmoid_2d(x, out):
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < x.shape[1]:
        out[i, j] = 1.0 / (1.0 + math.exp(-x[i, j]))


CORPUS = [
    ("axpy_f32", axpy, "void(float32, float32[:], float32[:], float32[:])"),
    ("axpy_f64", axpy, "void(float64, float64[:], float64[:], float64[:])"),
    ("horner_f32", horner, "void(float32[:], float32[:])"),
    ("horner_f64", horner, "void(float64[:], float64[:])"),
    ("clip_grid_stride_f32", clip_grid_stride, "void(float32[:], float32, float32)"),
    ("clip_grid_stride_i32", clip_grid_stride, "void(int32[:], int32, int32)"),
    ("magnitude_f32", magnitude, "void(float32[:], float32[:], float32[:])"),
    ("sigmoid_2d_f32", sigmoid_2d, "void(float32[:, :], float32[:, :])"),
    ("sigmoid_2d_f64", sigmoid_2d, "void(float64[:, :], float64[:, :])"),
]
