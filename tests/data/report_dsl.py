"""A DSL kernel for ``ptxforge report``: a dot product with eight running sums in a loop.

``ptxforge report`` runs this file and reads ``module`` (docs/report.md); the source view
then shows these Python lines, the hottest being the loop body where the eight sums live.
"""

from ptxforge import KernelBuilder
from ptxforge.ptx import types as T

kb = KernelBuilder("dot8", target="sm_80")
x = kb.load_param(kb.param_ptr("x", T.f32))
y = kb.load_param(kb.param_ptr("y", T.f32))
out = kb.load_param(kb.param_ptr("out", T.f32))
n = kb.load_param(kb.param("n", T.u32))
i = kb.global_id()
sums = [kb.mov(0.0, type=T.f32) for _ in range(8)]
with kb.loop(0, n, 1, unroll=False) as k:
    px = kb.elem_ptr(x, kb.mad(k, 8, 0))
    py = kb.elem_ptr(y, kb.mad(k, 8, 0))
    for j in range(8):
        kb.ifma(sums[j], kb.ld(px, offset=4 * j), kb.ld(py, offset=4 * j))
total = sums[0]
for s in sums[1:]:
    total = kb.add(total, s)
kb.st(kb.elem_ptr(out, i), total)
kb.ret()
module = kb.build()
