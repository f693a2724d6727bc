"""CUDA C++ sources of the scale corpus, one function per file class.

Each function returns ``{file stem: source}``.  The sources are written for this benchmark:
cub block- and warp-level primitives and cub's device-wide reduce kernels instantiated
explicitly, thrust algorithms (compiled by nvcc), a 256-instantiation template file, two
heavily unrolled files of 2-4 MB of PTX, tensor-core GEMMs (wmma and inline ``mma.sync``), and
a folder of small translation units plus a few globals-only files.

Example::

    >>> srcs = many_sources()
    >>> sorted(srcs)
    ['many_templates']
"""

from __future__ import annotations

__all__ = [
    "NVRTC_PRELUDE",
    "big_sources",
    "cub_sources",
    "many_sources",
    "small_sources",
    "thrust_sources",
]

#: cub's device-level headers refuse NVRTC unless told; the kernels themselves compile.
NVRTC_PRELUDE = "#define CCCL_DISABLE_NVRTC_COMPATIBILITY_CHECK\n"

# (C++ type, short name) pairs used across classes.
_ARITH = [("float", "f32"), ("double", "f64"), ("int", "s32"), ("unsigned", "u32"),
          ("long long", "s64"), ("unsigned long long", "u64"), ("short", "s16"),
          ("signed char", "s8")]


def _inst(kernel: str, targs: str, params: str) -> str:
    """One explicit instantiation line of a ``__global__`` template."""
    return f"template __global__ void {kernel}<{targs}>({params});\n"


# --- class a: cub ------------------------------------------------------------------------------

_CUB_REDUCE_SCAN = r"""
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/warp/warp_reduce.cuh>

struct MaxOp { template <typename T> __device__ T operator()(const T& a, const T& b) const { return a < b ? b : a; } };

template <typename T, int BS, int IPT, cub::BlockReduceAlgorithm A>
__global__ void __launch_bounds__(BS) block_sum(const T* in, T* out, int n) {
  using BR = cub::BlockReduce<T, BS, A>;
  __shared__ typename BR::TempStorage tmp;
  T v[IPT];
  const int base = blockIdx.x * BS * IPT;
  cub::LoadDirectStriped<BS>(threadIdx.x, in + base, v, n - base, T(0));
  T r = BR(tmp).Sum(v);
  if (threadIdx.x == 0) out[blockIdx.x] = r;
}

template <typename T, int BS, int IPT, cub::BlockReduceAlgorithm A>
__global__ void __launch_bounds__(BS) block_max(const T* in, T* out, int n) {
  using BR = cub::BlockReduce<T, BS, A>;
  __shared__ typename BR::TempStorage tmp;
  T v[IPT];
  const int base = blockIdx.x * BS * IPT;
  cub::LoadDirectBlocked(threadIdx.x, in + base, v, n - base, T(0));
  T r = BR(tmp).Reduce(v, MaxOp());
  if (threadIdx.x == 0) out[blockIdx.x] = r;
}

template <typename T, int BS, int IPT, cub::BlockScanAlgorithm A>
__global__ void __launch_bounds__(BS) block_exscan(const T* in, T* out, T* totals) {
  using BS_t = cub::BlockScan<T, BS, A>;
  __shared__ typename BS_t::TempStorage tmp;
  T v[IPT];
  const int base = blockIdx.x * BS * IPT;
  cub::LoadDirectBlocked(threadIdx.x, in + base, v);
  T total;
  BS_t(tmp).ExclusiveSum(v, v, total);
  cub::StoreDirectBlocked(threadIdx.x, out + base, v);
  if (threadIdx.x == 0) totals[blockIdx.x] = total;
}

template <typename T, int BS, int IPT, cub::BlockScanAlgorithm A>
__global__ void __launch_bounds__(BS) block_inscan_max(const T* in, T* out) {
  using BS_t = cub::BlockScan<T, BS, A>;
  __shared__ typename BS_t::TempStorage tmp;
  T v[IPT];
  const int base = blockIdx.x * BS * IPT;
  cub::LoadDirectStriped<BS>(threadIdx.x, in + base, v);
  BS_t(tmp).InclusiveScan(v, v, MaxOp());
  cub::StoreDirectStriped<BS>(threadIdx.x, out + base, v);
}

template <typename T, int WARPS, int LOGICAL>
__global__ void __launch_bounds__(WARPS * 32) warp_sums(const T* in, T* out) {
  using WR = cub::WarpReduce<T, LOGICAL>;
  __shared__ typename WR::TempStorage tmp[WARPS * 32 / LOGICAL];
  const int g = threadIdx.x / LOGICAL;
  T x = in[blockIdx.x * WARPS * 32 + threadIdx.x];
  T s = WR(tmp[g]).Sum(x);
  T m = WR(tmp[g]).Reduce(x * x, MaxOp());
  if (threadIdx.x % LOGICAL == 0) { out[2 * (blockIdx.x * WARPS * 32 / LOGICAL + g)] = s;
                                    out[2 * (blockIdx.x * WARPS * 32 / LOGICAL + g) + 1] = m; }
}
"""

_CUB_SORT_HIST = r"""
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_histogram.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>

template <typename K, int BS, int IPT>
__global__ void __launch_bounds__(BS) sort_keys(K* keys) {
  using S = cub::BlockRadixSort<K, BS, IPT>;
  __shared__ typename S::TempStorage tmp;
  K k[IPT];
  const int base = blockIdx.x * BS * IPT;
  cub::LoadDirectStriped<BS>(threadIdx.x, keys + base, k);
  S(tmp).Sort(k);
  cub::StoreDirectBlocked(threadIdx.x, keys + base, k);
}

template <typename K, typename V, int BS, int IPT>
__global__ void __launch_bounds__(BS) sort_pairs_desc(K* keys, V* vals) {
  using S = cub::BlockRadixSort<K, BS, IPT, V>;
  __shared__ typename S::TempStorage tmp;
  K k[IPT]; V v[IPT];
  const int base = blockIdx.x * BS * IPT;
  cub::LoadDirectBlocked(threadIdx.x, keys + base, k);
  cub::LoadDirectBlocked(threadIdx.x, vals + base, v);
  S(tmp).SortDescendingBlockedToStriped(k, v);
  cub::StoreDirectStriped<BS>(threadIdx.x, keys + base, k);
  cub::StoreDirectStriped<BS>(threadIdx.x, vals + base, v);
}

template <int BS, int IPT, int BINS, cub::BlockHistogramAlgorithm A>
__global__ void __launch_bounds__(BS) histo(const unsigned char* in, unsigned* bins) {
  using H = cub::BlockHistogram<unsigned char, BS, IPT, BINS, A>;
  __shared__ typename H::TempStorage tmp;
  __shared__ unsigned smem[BINS];
  unsigned char v[IPT];
  cub::LoadDirectStriped<BS>(threadIdx.x, in + blockIdx.x * BS * IPT, v);
  for (int i = 0; i < IPT; ++i) v[i] = (unsigned char)(v[i] % BINS);
  H(tmp).Histogram(v, smem);
  __syncthreads();
  for (int b = threadIdx.x; b < BINS; b += BS) atomicAdd(&bins[b], smem[b]);
}
"""

_CUB_IO = r"""
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>

template <typename T, int BS, int IPT, cub::BlockLoadAlgorithm L, cub::BlockStoreAlgorithm S>
__global__ void __launch_bounds__(BS) load_scale_store(const T* in, T* out, T a, int n) {
  using Ld = cub::BlockLoad<T, BS, IPT, L>;
  using St = cub::BlockStore<T, BS, IPT, S>;
  __shared__ union { typename Ld::TempStorage l; typename St::TempStorage s; } tmp;
  T v[IPT];
  const int base = blockIdx.x * BS * IPT;
  const int valid = n - base;
  if (valid >= BS * IPT) Ld(tmp.l).Load(in + base, v); else Ld(tmp.l).Load(in + base, v, valid, T(0));
  __syncthreads();
#pragma unroll
  for (int i = 0; i < IPT; ++i) v[i] = v[i] * a + T(i);
  if (valid >= BS * IPT) St(tmp.s).Store(out + base, v); else St(tmp.s).Store(out + base, v, valid);
}
"""

_CUB_DEVICE = r"""
#include <cub/device/dispatch/tuning/tuning_reduce.cuh>
#include <cub/device/dispatch/kernels/kernel_reduce.cuh>
namespace R = cub::detail::reduce;
using plus_t = ::cuda::std::plus<>;
using max_t = ::cuda::maximum<>;
using min_t = ::cuda::minimum<>;
using id_t = ::cuda::std::identity;
"""


def _cub_reduce_scan() -> str:
    out = [NVRTC_PRELUDE, _CUB_REDUCE_SCAN]
    types = ["float", "double", "int", "unsigned long long"]
    for t in types:
        for bs in (64, 128, 256, 512):
            for ipt in (1, 4):
                for alg in ("cub::BLOCK_REDUCE_WARP_REDUCTIONS", "cub::BLOCK_REDUCE_RAKING"):
                    targs = f"{t}, {bs}, {ipt}, {alg}"
                    out.append(_inst("block_sum", targs, f"const {t}*, {t}*, int"))
                    out.append(_inst("block_max", targs, f"const {t}*, {t}*, int"))
                for alg in ("cub::BLOCK_SCAN_RAKING", "cub::BLOCK_SCAN_WARP_SCANS"):
                    targs = f"{t}, {bs}, {ipt}, {alg}"
                    out.append(_inst("block_exscan", targs, f"const {t}*, {t}*, {t}*"))
                out.append(_inst("block_inscan_max", f"{t}, {bs}, {ipt}, cub::BLOCK_SCAN_WARP_SCANS",
                                 f"const {t}*, {t}*"))
        for warps in (1, 4):
            for logical in (8, 16, 32):
                out.append(_inst("warp_sums", f"{t}, {warps}, {logical}", f"const {t}*, {t}*"))
    return "".join(out)


def _cub_sort_hist() -> str:
    out = [NVRTC_PRELUDE, _CUB_SORT_HIST]
    for k in ("float", "int", "unsigned", "double"):
        for bs in (128, 256):
            for ipt in (4, 8):
                out.append(_inst("sort_keys", f"{k}, {bs}, {ipt}", f"{k}*"))
                out.append(_inst("sort_pairs_desc", f"{k}, int, {bs}, {ipt}", f"{k}*, int*"))
    for bs in (128, 256):
        for ipt in (4, 16):
            for bins in (64, 256):
                for alg in ("cub::BLOCK_HISTO_SORT", "cub::BLOCK_HISTO_ATOMIC"):
                    out.append(_inst("histo", f"{bs}, {ipt}, {bins}, {alg}",
                                     "const unsigned char*, unsigned*"))
    return "".join(out)


def _cub_io() -> str:
    out = [NVRTC_PRELUDE, _CUB_IO]
    algs = [("cub::BLOCK_LOAD_DIRECT", "cub::BLOCK_STORE_DIRECT"),
            ("cub::BLOCK_LOAD_STRIPED", "cub::BLOCK_STORE_STRIPED"),
            ("cub::BLOCK_LOAD_VECTORIZE", "cub::BLOCK_STORE_VECTORIZE"),
            ("cub::BLOCK_LOAD_TRANSPOSE", "cub::BLOCK_STORE_TRANSPOSE"),
            ("cub::BLOCK_LOAD_WARP_TRANSPOSE", "cub::BLOCK_STORE_WARP_TRANSPOSE")]
    for t in ("float", "double", "int", "short"):
        for bs in (128, 256):
            for ipt in (4, 8):
                for ld, st in algs:
                    out.append(_inst("load_scale_store", f"{t}, {bs}, {ipt}, {ld}, {st}",
                                     f"const {t}*, {t}*, {t}, int"))
    return "".join(out)


def _cub_device() -> str:
    out = [NVRTC_PRELUDE, _CUB_DEVICE]
    for t in ("float", "double", "int", "long long"):
        for op in ("plus_t", "max_t", "min_t"):
            ps = f"R::policy_selector_from_types<{t}, int, {op}>"
            out.append(
                f"template __global__ void R::DeviceReduceSingleTileKernel<{ps}, const {t}*, {t}*, "
                f"int, {op}, {t}, {t}, id_t>(const {t}* const, {t}*, const int, {op}, const {t}, "
                "id_t);\n")
            out.append(
                f"template __global__ void R::DeviceReduceKernel<{ps}, true, const {t}*, {t}*, int, "
                f"int, {op}, {t}, {t}, id_t>(const {t}* const, {t}* const, const int, "
                f"cub::GridEvenShare<int>, {op}, const {t}, id_t);\n")
    return "".join(out)


def cub_sources() -> dict:
    """cub block/warp primitives and device-wide reduce kernels, NVRTC sources."""
    return {"cub_reduce_scan": _cub_reduce_scan(), "cub_sort_histogram": _cub_sort_hist(),
            "cub_load_store": _cub_io(), "cub_device_reduce": _cub_device()}


# --- thrust (nvcc) -----------------------------------------------------------------------------

_THRUST = r"""
#include <thrust/device_ptr.h>
#include <thrust/sort.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/transform_reduce.h>
#include <thrust/functional.h>

template <typename T> struct square { __host__ __device__ T operator()(const T& x) const { return x * x; } };

template <typename T> void sort_all(T* p, int n) {
  thrust::device_ptr<T> d(p);
  thrust::sort(d, d + n);
  thrust::sort(d, d + n, thrust::greater<T>());
}
template <typename T> void sort_kv(T* k, int* v, int n) {
  thrust::sort_by_key(thrust::device_ptr<T>(k), thrust::device_ptr<T>(k + n), thrust::device_ptr<int>(v));
}
template <typename T> T stats(T* p, int n) {
  thrust::device_ptr<T> d(p);
  T s = thrust::reduce(d, d + n);
  T q = thrust::transform_reduce(d, d + n, square<T>(), T(0), thrust::plus<T>());
  thrust::inclusive_scan(d, d + n, d);
  return s + q;
}
"""


def thrust_sources() -> dict:
    """thrust sort / reduce / scan for a few types (host code: needs nvcc, not NVRTC)."""
    sort_types = ("float", "int", "unsigned long long")
    sort = _THRUST + "".join(
        f"template void sort_all<{t}>({t}*, int);\ntemplate void sort_kv<{t}>({t}*, int*, int);\n"
        for t in sort_types)
    scan = _THRUST + "".join(f"template {t} stats<{t}>({t}*, int);\n"
                             for t in ("float", "double", "int", "long long"))
    return {"thrust_sort": sort, "thrust_reduce_scan": scan}


# --- class b: many-kernel template file --------------------------------------------------------

_MANY = r"""
template <typename T, int K>
__global__ void __launch_bounds__(256) axpy_k(const T* __restrict__ x, T* __restrict__ y, T a, int n) {
  const int i0 = (blockIdx.x * blockDim.x + threadIdx.x) * K;
#pragma unroll
  for (int k = 0; k < K; ++k) { int i = i0 + k; if (i < n) y[i] = a * x[i] + y[i]; }
}

template <typename T, int R>
__global__ void __launch_bounds__(128) stencil_k(const T* __restrict__ in, T* __restrict__ out, int n) {
  __shared__ T tile[128 + 2 * R];
  const int g = blockIdx.x * 128 + threadIdx.x;
  tile[threadIdx.x + R] = g < n ? in[g] : T(0);
  if (threadIdx.x < R) {
    tile[threadIdx.x] = g >= R ? in[g - R] : T(0);
    tile[threadIdx.x + 128 + R] = g + 128 < n ? in[g + 128] : T(0);
  }
  __syncthreads();
  T acc = T(0);
#pragma unroll
  for (int d = -R; d <= R; ++d) acc += tile[threadIdx.x + R + d] * T(R + 1 - (d < 0 ? -d : d));
  if (g < n) out[g] = acc;
}

template <typename T, int IPT>
__global__ void __launch_bounds__(256) reduce_k(const T* __restrict__ in, T* __restrict__ out, int n) {
  __shared__ T s[256];
  T acc = T(0);
  const int base = blockIdx.x * 256 * IPT + threadIdx.x;
#pragma unroll
  for (int k = 0; k < IPT; ++k) { int i = base + k * 256; if (i < n) acc += in[i]; }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int w = 128; w > 0; w >>= 1) { if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w]; __syncthreads(); }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

template <typename T, int DEG>
__global__ void __launch_bounds__(256) poly_k(const T* __restrict__ x, const T* __restrict__ c, T* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  T v = x[i], r = c[DEG], p = T(1), s = T(0);
#pragma unroll
  for (int d = DEG - 1; d >= 0; --d) { r = r * v + c[d]; p = p * v; s += p; }
  y[i] = r + (s > T(0) ? s : -s);
}
"""


def many_sources() -> dict:
    """One file, 4 kernel kinds x 8 types x 8 sizes = 256 template instantiations."""
    out = [_MANY]
    sizes = (1, 2, 3, 4, 6, 8, 12, 16)
    for t, _ in _ARITH:
        for k in sizes:
            out.append(_inst("axpy_k", f"{t}, {k}", f"const {t}*, {t}*, {t}, int"))
            out.append(_inst("stencil_k", f"{t}, {k}", f"const {t}*, {t}*, int"))
            out.append(_inst("reduce_k", f"{t}, {k}", f"const {t}*, {t}*, int"))
            out.append(_inst("poly_k", f"{t}, {k}", f"const {t}*, const {t}*, {t}*, int"))
    return {"many_templates": "".join(out)}


# --- class c: 2-4 MB files ---------------------------------------------------------------------

_BIG_UNROLL = r"""
template <typename T, int TAPS>
__global__ void __launch_bounds__(256) fir_gate(const T* __restrict__ x, const T* __restrict__ h,
                                               T* __restrict__ y, T lo, T hi, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + TAPS >= n) return;
  T acc = T(0), peak = T(0);
#pragma unroll
  for (int t = 0; t < TAPS; ++t) {
    T v = x[i + t] * h[t];
    if (v > hi) v = hi - (v - hi) * T(0.5);
    else if (v < lo) v = lo + (lo - v) * T(0.25);
    acc += v;
    peak = v > peak ? v : peak;
  }
  y[i] = acc + peak;
}

template <typename T, int N>
__global__ void __launch_bounds__(128) bitonic_regs(T* data) {
  T r[N];
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * N;
#pragma unroll
  for (int i = 0; i < N; ++i) r[i] = data[base + i];
#pragma unroll
  for (int k = 2; k <= N; k <<= 1) {
#pragma unroll
    for (int j = k >> 1; j > 0; j >>= 1) {
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const int l = i ^ j;
        if (l > i) {
          const bool up = (i & k) == 0;
          T a = r[i], b = r[l];
          const bool sw = up ? (a > b) : (a < b);
          r[i] = sw ? b : a; r[l] = sw ? a : b;
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < N; ++i) data[base + i] = r[i];
}
"""

_BIG_CUB = r"""
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>

template <typename K, int BS, int IPT, int BITS>
__global__ void __launch_bounds__(BS) sort_then_scan(K* keys, int* ranks) {
  using S = cub::BlockRadixSort<K, BS, IPT, int, BITS>;
  using Sc = cub::BlockScan<int, BS>;
  __shared__ union { typename S::TempStorage s; typename Sc::TempStorage c; } tmp;
  K k[IPT]; int v[IPT];
  const int base = blockIdx.x * BS * IPT;
  cub::LoadDirectStriped<BS>(threadIdx.x, keys + base, k);
#pragma unroll
  for (int i = 0; i < IPT; ++i) v[i] = (k[i] > K(0)) ? 1 : 0;
  S(tmp.s).Sort(k, v);
  __syncthreads();
  Sc(tmp.c).ExclusiveSum(v, v);
  cub::StoreDirectBlocked(threadIdx.x, keys + base, k);
  cub::StoreDirectBlocked(threadIdx.x, ranks + base, v);
}
"""


def big_sources() -> dict:
    """Two files of 2-4 MB of PTX: unrolled filters and register sorting networks; cub sorts."""
    unroll = [_BIG_UNROLL]
    for t in ("float", "double", "int"):
        for taps in (256, 512, 1024):
            unroll.append(_inst("fir_gate", f"{t}, {taps}", f"const {t}*, const {t}*, {t}*, {t}, {t}, int"))
        for n in (32, 64):
            unroll.append(_inst("bitonic_regs", f"{t}, {n}", f"{t}*"))
    cub = [NVRTC_PRELUDE, _BIG_CUB]
    for k in ("float", "int", "unsigned", "double", "long long", "unsigned long long"):
        for bs in (128, 256):
            for ipt in (4, 8, 12):
                for bits in (4, 6):
                    cub.append(_inst("sort_then_scan", f"{k}, {bs}, {ipt}, {bits}", f"{k}*, int*"))
    return {"big_unrolled": "".join(unroll), "big_cub_sorts": "".join(cub)}


# --- class e: a build folder of small translation units ----------------------------------------

_SMALL_BODIES = [
    ("scale", "y[i] = x[i] * a + b;"),
    ("clamp", "T v = x[i] * a; y[i] = v < b ? b : (v > a ? a : v);"),
    ("poly3", "T v = x[i]; y[i] = ((a * v + b) * v + a) * v + b;"),
    ("absdiff", "T d = x[i] - y[i]; y[i] = d < T(0) ? -d : d;"),
    ("mix", "y[i] = a * x[i] + (T(1) - a) * y[i] + b;"),
    ("gather", "int j = (i * 7 + 3) % n; y[i] = x[j] * a + y[i] * b;"),
]

_SMALL_KERNEL = r"""
template <typename T>
__global__ void __launch_bounds__({bs}) {name}_{suffix}(const T* __restrict__ x, T* __restrict__ y, T a, T b, int n) {{
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{
    {body}
  }}
}}
template __global__ void {name}_{suffix}<{t}>(const {t}*, {t}*, {t}, {t}, int);
"""

_SMALL_SHARED = r"""
__global__ void __launch_bounds__(256) block_sum_{suffix}(const {t}* __restrict__ x, {t}* out, int n) {{
  __shared__ {t} s[256];
  {t} acc = 0;
  for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256) acc += x[i];
  s[threadIdx.x] = acc;
  __syncthreads();
#pragma unroll
  for (int w = 128; w > 0; w >>= 1) {{ if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w]; __syncthreads(); }}
  if (threadIdx.x == 0) atomicAdd(out, s[0]);
}}

__global__ void __launch_bounds__(1024) transpose_{suffix}(const {t}* __restrict__ a, {t}* __restrict__ b, int rows, int cols) {{
  __shared__ {t} tile[32][33];
  int c = blockIdx.x * 32 + threadIdx.x, r = blockIdx.y * 32 + threadIdx.y;
  if (r < rows && c < cols) tile[threadIdx.y][threadIdx.x] = a[r * cols + c];
  __syncthreads();
  c = blockIdx.y * 32 + threadIdx.x; r = blockIdx.x * 32 + threadIdx.y;
  if (r < cols && c < rows) b[r * rows + c] = tile[threadIdx.x][threadIdx.y];
}}
"""


def small_sources(count: int = 120) -> dict:
    """``count`` small translation units (four to nine kernels each) and four globals-only files."""
    types = ("float", "double", "int", "unsigned")
    out = {}
    for f in range(count):
        t = types[f % len(types)]
        parts = []
        nk = 4 + (f * 3) % 5
        for k in range(nk):
            name, body = _SMALL_BODIES[(f + 2 * k) % len(_SMALL_BODIES)]
            parts.append(_SMALL_KERNEL.format(bs=(128, 256, 512)[(f + k) % 3], name=name,
                                              suffix=f"u{f}k{k}", body=body, t=t))
        if f % 3 == 0 and t != "double":
            parts.append(_SMALL_SHARED.format(suffix=f"u{f}", t=t))
        out[f"unit_{f:03d}"] = "".join(parts)
    for g in range(4):
        n = 256 * (g + 1)
        vals = ", ".join(f"{(i * 37 + g) % 101 / 7.0:.6f}f" for i in range(n))
        ints = ", ".join(str((i * 13 + g * 5) % 251) for i in range(n))
        out[f"globals_{g}"] = (
            f"__constant__ float coeffs_{g}[{n}] = {{{vals}}};\n"
            f"__device__ int lut_{g}[{n}] = {{{ints}}};\n"
            f"__device__ unsigned long long counters_{g}[{8 * n}];\n"
            f"__device__ double scratch_{g}[{n}];\n")
    return out
