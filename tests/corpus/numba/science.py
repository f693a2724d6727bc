"""numba-cuda kernels from scientific codes: n-body, Mandelbrot, Black-Scholes, Monte Carlo
with xorshift random numbers, 2D Jacobi, a 3D Laplacian, CSR SpMV, a Lennard-Jones cell loop,
RGB to grey and a Gaussian blur."""

import math

from numba import cuda, uint32


def nbody_step(pos, vel, acc_out, n, eps2):
    i = cuda.grid(1)
    if i >= n:
        return
    xi, yi, zi = pos[i, 0], pos[i, 1], pos[i, 2]
    ax = ay = az = 0.0
    for j in range(n):
        dx = pos[j, 0] - xi
        dy = pos[j, 1] - yi
        dz = pos[j, 2] - zi
        r2 = dx * dx + dy * dy + dz * dz + eps2
        inv = 1.0 / math.sqrt(r2 * r2 * r2)
        m = pos[j, 3] * inv
        ax += dx * m
        ay += dy * m
        az += dz * m
    acc_out[i, 0] = ax
    acc_out[i, 1] = ay
    acc_out[i, 2] = az


def mandelbrot(img, x0, y0, dx, dy, max_iter):
    px, py = cuda.grid(2)
    if px >= img.shape[1] or py >= img.shape[0]:
        return
    cr = x0 + px * dx
    ci = y0 + py * dy
    zr = zi = 0.0
    it = 0
    while it < max_iter and zr * zr + zi * zi < 4.0:
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        it += 1
    img[py, px] = it


def black_scholes(s, k, t, r, v, call, put):
    i = cuda.grid(1)
    if i >= s.size:
        return
    sq = v * math.sqrt(t[i])
    d1 = (math.log(s[i] / k[i]) + (r + 0.5 * v * v) * t[i]) / sq
    d2 = d1 - sq
    nd1 = 0.5 * (1.0 + math.erf(d1 / math.sqrt(2.0)))
    nd2 = 0.5 * (1.0 + math.erf(d2 / math.sqrt(2.0)))
    disc = k[i] * math.exp(-r * t[i])
    call[i] = s[i] * nd1 - disc * nd2
    put[i] = disc * (1.0 - nd2) - s[i] * (1.0 - nd1)


def monte_carlo_pi(seeds, counts, samples):
    # xorshift32 per thread (numba's xoroshiro helpers ask the driver for the device's SM)
    i = cuda.grid(1)
    if i >= counts.size:
        return
    state = uint32(seeds[i] | 1)
    hit = 0
    for _ in range(samples):
        state ^= uint32(state << 13)
        state ^= state >> 17
        state ^= uint32(state << 5)
        x = state * 2.3283064e-10
        state ^= uint32(state << 13)
        state ^= state >> 17
        state ^= uint32(state << 5)
        y = state * 2.3283064e-10
        if x * x + y * y <= 1.0:
            hit += 1
    counts[i] = hit


def jacobi2d(a, b):
    i, j = cuda.grid(2)
    if 0 < i < a.shape[0] - 1 and 0 < j < a.shape[1] - 1:
        b[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])


def laplace3d(u, out, h2):
    i, j, k = cuda.grid(3)
    if 0 < i < u.shape[0] - 1 and 0 < j < u.shape[1] - 1 and 0 < k < u.shape[2] - 1:
        out[i, j, k] = (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j + 1, k]
                        + u[i, j, k - 1] + u[i, j, k + 1] - 6.0 * u[i, j, k]) / h2


def spmv_csr(indptr, indices, data, x, y):
    row = cuda.grid(1)
    if row < y.size:
        s = 0.0
        for p in range(indptr[row], indptr[row + 1]):
            s += data[p] * x[indices[p]]
        y[row] = s


def lennard_jones(pos, cell_start, cell_count, cells, force, rc2):
    i = cuda.grid(1)
    if i >= pos.shape[0]:
        return
    fx = fy = fz = 0.0
    c = cells[i]
    for p in range(cell_start[c], cell_start[c] + cell_count[c]):
        dx = pos[i, 0] - pos[p, 0]
        dy = pos[i, 1] - pos[p, 1]
        dz = pos[i, 2] - pos[p, 2]
        r2 = dx * dx + dy * dy + dz * dz
        if 0.0 < r2 < rc2:
            inv2 = 1.0 / r2
            inv6 = inv2 * inv2 * inv2
            f = 24.0 * inv2 * inv6 * (2.0 * inv6 - 1.0)
            fx += f * dx
            fy += f * dy
            fz += f * dz
    force[i, 0] = fx
    force[i, 1] = fy
    force[i, 2] = fz


def rgb_to_grey(rgb, grey):
    x, y = cuda.grid(2)
    if y < rgb.shape[0] and x < rgb.shape[1]:
        grey[y, x] = 0.299 * rgb[y, x, 0] + 0.587 * rgb[y, x, 1] + 0.114 * rgb[y, x, 2]


def gaussian_blur5(img, out, w):
    x, y = cuda.grid(2)
    h, wd = img.shape
    if y >= h or x >= wd:
        return
    acc = 0.0
    for dy in range(-2, 3):
        for dx in range(-2, 3):
            yy = min(max(y + dy, 0), h - 1)
            xx = min(max(x + dx, 0), wd - 1)
            acc += w[dy + 2, dx + 2] * img[yy, xx]
    out[y, x] = acc


CORPUS = [
    ("nbody_step_f32", nbody_step, "void(float32[:, :], float32[:, :], float32[:, :], int32, float32)"),
    ("nbody_step_f64", nbody_step, "void(float64[:, :], float64[:, :], float64[:, :], int32, float64)"),
    ("mandelbrot_f32", mandelbrot, "void(int32[:, :], float32, float32, float32, float32, int32)"),
    ("mandelbrot_f64", mandelbrot, "void(int32[:, :], float64, float64, float64, float64, int32)"),
    ("black_scholes_f32", black_scholes,
     "void(float32[:], float32[:], float32[:], float32, float32, float32[:], float32[:])"),
    ("black_scholes_f64", black_scholes,
     "void(float64[:], float64[:], float64[:], float64, float64, float64[:], float64[:])"),
    ("monte_carlo_pi", monte_carlo_pi, "void(uint32[:], int32[:], int32)"),
    ("jacobi2d_f32", jacobi2d, "void(float32[:, :], float32[:, :])"),
    ("jacobi2d_f64", jacobi2d, "void(float64[:, :], float64[:, :])"),
    ("laplace3d_f32", laplace3d, "void(float32[:, :, :], float32[:, :, :], float32)"),
    ("laplace3d_f64", laplace3d, "void(float64[:, :, :], float64[:, :, :], float64)"),
    ("spmv_csr_f32", spmv_csr, "void(int32[:], int32[:], float32[:], float32[:], float32[:])"),
    ("spmv_csr_f64", spmv_csr, "void(int64[:], int64[:], float64[:], float64[:], float64[:])"),
    ("lennard_jones_f32", lennard_jones,
     "void(float32[:, :], int32[:], int32[:], int32[:], float32[:, :], float32)"),
    ("rgb_to_grey_u8", rgb_to_grey, "void(uint8[:, :, :], float32[:, :])"),
    ("gaussian_blur5_f32", gaussian_blur5, "void(float32[:, :], float32[:, :], float32[:, :])"),
]
