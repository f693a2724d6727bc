"""Atomics applied to all distinct locations at once: colliding updates still compose in thread
order (``atom`` returns each thread's old value as a sequence of updates would), in global and
per-block shared memory."""

from __future__ import annotations

import numpy as np
import pytest

from ptxforge.launch.loader import load

from corpus_util import compile_cu

ATOMS = r"""
extern "C" __global__ void tickets(unsigned *counter, unsigned *ticket, unsigned *wrapped,
                                   unsigned *shared_out) {
    __shared__ unsigned bins[8];
    unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (t < 8) bins[t] = 0;
    __syncthreads();
    ticket[i] = atomicAdd(&counter[t % 5], 1u);
    wrapped[i] = atomicInc(&counter[5], 6u);
    atomicMax(&bins[t % 8], t * 3u);
    __syncthreads();
    if (t < 8) shared_out[blockIdx.x * 8 + t] = bins[t];
}
"""


@pytest.fixture(scope="module")
def tickets():
    return load(compile_cu(ATOMS, "tickets"), device="emulator")["tickets"]


def test_colliding_atomics_compose_in_thread_order(tickets):
    block, grid = 96, 2
    n = block * grid
    counter = np.zeros(6, np.uint32)
    ticket, wrapped = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
    shared_out = np.zeros(grid * 8, np.uint32)
    tickets(counter, ticket, wrapped, shared_out, grid=grid, block=block)
    t = np.arange(n) % block
    # one wave runs both blocks; the threads of each location update in thread order
    for k in range(5):
        mine = np.flatnonzero(t % 5 == k)
        assert sorted(ticket[mine].tolist()) == list(range(len(mine)))
        assert (np.diff(ticket[mine].astype(np.int64)) > 0).all()
    assert counter[:5].tolist() == [int((t % 5 == k).sum()) for k in range(5)]
    assert wrapped.tolist() == [k % 7 for k in range(n)]
    want = [max(3 * x for x in range(block) if x % 8 == k) for k in range(8)]
    assert shared_out.tolist() == want * grid
