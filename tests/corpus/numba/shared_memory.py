"""numba-cuda kernels with shared memory and synchronisation: tiled matmul, block reductions,
transpose, a 1D stencil with halos, a shared histogram, a Hillis-Steele scan."""

from numba import cuda, float32, float64, int32

TILE = 16


def matmul_tiled_f32(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    x, y = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    acc = float32(0.0)
    for t in range((a.shape[1] + TILE - 1) // TILE):
        sa[ty, tx] = a[y, t * TILE + tx] if y < a.shape[0] and t * TILE + tx < a.shape[1] else 0
        sb[ty, tx] = b[t * TILE + ty, x] if x < b.shape[1] and t * TILE + ty < b.shape[0] else 0
        cuda.syncthreads()
        for k in range(TILE):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()
    if y < c.shape[0] and x < c.shape[1]:
        c[y, x] = acc


def matmul_tiled_f64(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float64)
    sb = cuda.shared.array((TILE, TILE), float64)
    x, y = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    acc = float64(0.0)
    for t in range((a.shape[1] + TILE - 1) // TILE):
        sa[ty, tx] = a[y, t * TILE + tx] if y < a.shape[0] and t * TILE + tx < a.shape[1] else 0
        sb[ty, tx] = b[t * TILE + ty, x] if x < b.shape[1] and t * TILE + ty < b.shape[0] else 0
        cuda.syncthreads()
        for k in range(TILE):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()
    if y < c.shape[0] and x < c.shape[1]:
        c[y, x] = acc


def block_sum_f32(x, out):
    s = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    stride = 128
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


def block_max_f64(x, out):
    s = cuda.shared.array(256, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else -1e300
    cuda.syncthreads()
    stride = 128
    while stride > 0:
        if t < stride:
            s[t] = max(s[t], s[t + stride])
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        cuda.atomic.max(out, 0, s[0])


def transpose_shared(a, b):
    tile = cuda.shared.array((32, 33), float32)
    x, y = cuda.grid(2)
    if y < a.shape[0] and x < a.shape[1]:
        tile[cuda.threadIdx.y, cuda.threadIdx.x] = a[y, x]
    cuda.syncthreads()
    ox = cuda.blockIdx.y * 32 + cuda.threadIdx.x
    oy = cuda.blockIdx.x * 32 + cuda.threadIdx.y
    if oy < b.shape[0] and ox < b.shape[1]:
        b[oy, ox] = tile[cuda.threadIdx.x, cuda.threadIdx.y]


def stencil1d_r3(x, out, c0, c1, c2, c3):
    s = cuda.shared.array(262, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.size
    s[t + 3] = x[i] if i < n else 0
    if t < 3:
        s[t] = x[i - 3] if i >= 3 else 0
        s[t + 259] = x[i + 256] if i + 256 < n else 0
    cuda.syncthreads()
    if i < n:
        out[i] = (c0 * s[t + 3] + c1 * (s[t + 2] + s[t + 4]) + c2 * (s[t + 1] + s[t + 5])
                  + c3 * (s[t] + s[t + 6]))


def histogram_shared(data, hist):
    h = cuda.shared.array(256, int32)
    t = cuda.threadIdx.x
    h[t] = 0
    cuda.syncthreads()
    start = cuda.grid(1)
    for i in range(start, data.size, cuda.gridsize(1)):
        cuda.atomic.add(h, data[i] & 255, 1)
    cuda.syncthreads()
    cuda.atomic.add(hist, t, h[t])


def hillis_steele_scan(x, out):
    s = cuda.shared.array(512, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    off = 1
    while off < 512:
        v = s[t - off] if t >= off else 0
        cuda.syncthreads()
        s[t] += v
        cuda.syncthreads()
        off *= 2
    if i < x.size:
        out[i] = s[t]


def warp_shuffle_sum(x, out):
    i = cuda.grid(1)
    v = x[i] if i < x.size else 0
    off = 16
    while off > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
        off //= 2
    if cuda.laneid == 0:
        cuda.atomic.add(out, 0, v)


CORPUS = [
    ("matmul_tiled_f32", matmul_tiled_f32, "void(float32[:, :], float32[:, :], float32[:, :])"),
    ("matmul_tiled_f64", matmul_tiled_f64, "void(float64[:, :], float64[:, :], float64[:, :])"),
    ("block_sum_f32", block_sum_f32, "void(float32[:], float32[:])"),
    ("block_max_f64", block_max_f64, "void(float64[:], float64[:])"),
    ("transpose_shared_f32", transpose_shared, "void(float32[:, :], float32[:, :])"),
    ("stencil1d_r3_f32", stencil1d_r3,
     "void(float32[:], float32[:], float32, float32, float32, float32)"),
    ("histogram_shared_u8", histogram_shared, "void(uint8[:], int32[:])"),
    ("histogram_shared_i32", histogram_shared, "void(int32[:], int32[:])"),
    ("hillis_steele_scan_f32", hillis_steele_scan, "void(float32[:], float32[:])"),
    ("warp_shuffle_sum_f32", warp_shuffle_sum, "void(float32[:], float32[:])"),
    ("warp_shuffle_sum_i32", warp_shuffle_sum, "void(int32[:], int32[:])"),
]
