"""Ray traversal with a private stack, after users' seed 004 (a DAG/octree ray caster).

Each thread walks a tree depth-first with a per-thread stack of node indices, written three
ways:

* **local**: ``u32 stack[DEPTH]`` indexed by the stack pointer; a run-time index cannot name
  a register, so the stack lives in local memory (ld.local / st.local, the stack frame);
* **registers**: the stack is DEPTH registers and push / pop shift every entry by one
  (predicated moves), so no index is ever dynamic and it can stay in registers;
* **shared**: the block's stacks in shared memory, entry ``s`` of thread ``t`` at
  ``stack[s * ntid + t]`` (consecutive threads in consecutive banks while their stack
  pointers agree);

and each with or without the seed's **node cache** (``+cache``): the block first copies the
tree's top CACHE_NODES nodes (levels 0-3 of the 4-ary tree) into shared memory, then reads a
node there when its index is below that, from global memory otherwise.

For each depth it prints ptxas's registers, stack frame and spills (sm_86, where 65536
registers per SM are shared by the resident threads) and the occupancy at 128 threads per
block (the seed's work groups are 64 wide; 128 keeps the 16-blocks-per-SM limit out of the
way).  Then, at one depth, the memory figures of each variant, from a profile on ptxforge's
PTX interpreter (ptxforge.launch.profile_kernel; docs/memory.md): local and global requests
and 32-byte sectors per request, shared requests, wavefronts per request and bank conflicts,
for coherent rays (neighbouring threads start alike, as neighbouring pixels do) over a
5-level tree.  Compile-time and interpreter figures; the kernels are unverified on hardware
(the tests run every variant on the interpreter against a Python walk).

    python examples/ray_traversal.py           # depths 8, 16, 32, 64; memory at depth 16
    python examples/ray_traversal.py --quick   # depths 8 and 32; memory at depth 8
"""

from __future__ import annotations

import sys

import _common  # noqa: F401  (puts a checkout's ptxforge on sys.path)

from ptxforge import analyze_pressure, compile_ptx, occupancy
from ptxforge.dsl.builder import KernelBuilder

TARGET, BLOCK = "sm_86", 128
CHILDREN = 4
DEPTHS, QUICK_DEPTHS = (8, 16, 32, 64), (8, 32)
MEMORY_DEPTH, QUICK_MEMORY_DEPTH = 16, 8
MAX_STEPS = 256
KINDS = ("local", "registers", "shared")
#: Nodes the cache holds: levels 0-3 of the 4-ary tree (1 + 4 + 16 + 64).
CACHE_NODES = 85
#: The profiled tree: 5 full levels of the 4-ary layout (node i's children are 4i+1 .. 4i+4).
TREE_NODES, RAYS = 1365, BLOCK


def name_of(kind: str, depth: int, cache: bool = False) -> str:
    """The kernel's name: ``walk_local_16``, ``walk_shared_8_cache``."""
    return f"walk_{kind}_{depth}" + ("_cache" if cache else "")


def _read_node(kb, nodes, node, cache):
    """(first child, child mask) of ``node``: from the shared cache when it holds it."""
    if cache is None:
        rec = kb.elem_ptr(nodes, kb.mul(node, 2))
        return kb.ld(rec), kb.ld(rec, offset=4)
    first, mask = kb.mov(0, type="u32"), kb.mov(0, type="u32")
    with kb.if_(kb.setp("<", node, CACHE_NODES)):
        rec = kb.elem_ptr(cache, kb.mul(node, 2))
        kb.assign(first, kb.ld(rec, space="shared"))
        kb.assign(mask, kb.ld(rec, offset=4, space="shared"))
    with kb.else_():
        rec = kb.elem_ptr(nodes, kb.mul(node, 2))
        kb.assign(first, kb.ld(rec))
        kb.assign(mask, kb.ld(rec, offset=4))
    return first, mask


def _fill_cache(kb, nodes):
    """Copy the first CACHE_NODES nodes into shared memory, the block's threads together."""
    table = kb.shared_array("node_cache", "u32", 2 * CACHE_NODES, align=8)
    base = kb.address_of(table)
    k, ntid = kb.mov(kb.tid()), kb.special("%ntid.x")
    with kb.while_(lambda: kb.setp("<", k, 2 * CACHE_NODES)):   # words t, t + ntid, ...
        kb.st(kb.elem_ptr(base, k), kb.ld(kb.elem_ptr(nodes, k)), space="shared")
        kb.iadd(k, ntid)
    kb.bar_sync()
    return base


def build(kind: str, depth: int, target: str = TARGET, cache: bool = False):
    """The traversal kernel with a ``depth``-entry stack; ``kind`` "local", "registers" or
    "shared"; ``cache``: read the tree's top CACHE_NODES nodes from a shared copy.

    nodes[i] = (first child, child mask) as two u32; a child c is entered when its bit is set
    and the ray's parameter at the child's slab lies in [tmin, tmax].
    """
    kb = KernelBuilder(name_of(kind, depth, cache), target=target)
    kb.maxntid(BLOCK)
    nodes = kb.load_param(kb.param_ptr("nodes", "u32"))
    rays = kb.load_param(kb.param_ptr("rays", "f32"))
    hits = kb.load_param(kb.param_ptr("hits", "u32"))
    table = _fill_cache(kb, nodes) if cache else None
    i = kb.global_id()
    ray = kb.elem_ptr(rays, kb.mul(i, 4))
    ox, inv_dx, tmin, tmax = (kb.ld(ray, offset=4 * k) for k in range(4))
    found, steps = kb.mov(0, type="u32"), kb.mov(0, type="u32")
    sp = kb.mov(1, type="u32")
    if kind == "local":
        stack = kb.local_array("stack", "u32", depth, align=4)
        base = kb.address_of(stack)
        kb.st(stack, 0, type="u32")                               # push the root
    elif kind == "shared":
        stack = kb.shared_array("stack", "u32", depth * BLOCK, align=4)
        base = kb.address_of(stack)
        tid, ntid = kb.tid(), kb.special("%ntid.x")
        kb.st(kb.elem_ptr(base, tid), 0, type="u32", space="shared")   # push the root
    else:
        slots = [kb.mov(0, type="u32") for _ in range(depth)]     # slots[0] is the top

    def entry(s):
        """The address of stack entry ``s`` (local or shared)."""
        if kind == "local":
            return kb.elem_ptr(base, s)
        return kb.elem_ptr(base, kb.add(kb.mul(s, ntid), tid))

    def pop():
        kb.isub(sp, 1)
        if kind != "registers":
            return kb.ld(entry(sp), space=kind)
        top = kb.mov(slots[0])
        for k in range(depth - 1):
            kb.assign(slots[k], slots[k + 1])
        return top

    def push(value, p):
        room = kb.setp("<", sp, depth, combine=("and", p))        # drop pushes that overflow
        if kind != "registers":
            kb.st(entry(sp), value, space=kind, pred=room)
        else:
            for k in range(depth - 1, 0, -1):
                kb.assign(slots[k], slots[k - 1], pred=room)
            kb.assign(slots[0], value, pred=room)
        kb.iadd(sp, kb.selp(1, 0, room, type="u32"))

    more = lambda: kb.setp(">", sp, 0,  # noqa: E731
                           combine=("and", kb.setp("<", steps, MAX_STEPS)))
    with kb.while_(more):
        kb.iadd(steps, 1)
        node = pop()
        first, mask = _read_node(kb, nodes, node, table)
        with kb.if_(kb.setp("==", mask, 0)):                       # a leaf: count the hit
            kb.iadd(found, 1)
        for c in range(CHILDREN):
            child = kb.add(first, c)
            t = kb.mul(kb.sub(kb.cvt(child, "f32"), ox), inv_dx)
            inside = kb.setp(">=", t, tmin, combine=("and", kb.setp("<=", t, tmax)))
            bit = kb.setp("!=", kb.and_(mask, 1 << c, type="b32"), 0, type="b32")
            push(child, kb.and_(inside, bit))
    kb.st(kb.elem_ptr(hits, kb.mul(i, 2)), (found, steps))
    return kb


def figures(depths=DEPTHS, target: str = TARGET) -> list:
    out = []
    for depth in depths:
        for kind in ("local", "registers"):
            module = build(kind, depth, target).build()
            kernel = module.kernels[0]
            stats = compile_ptx(module, target, backend="ptxas")[kernel.name]
            occ = occupancy(stats.registers, BLOCK, target)
            out.append({"kind": kind, "depth": depth, "stack_bytes": 4 * depth,
                        "registers": stats.registers, "frame": stats.stack_frame,
                        "spill_stores": stats.spill_stores, "spill_loads": stats.spill_loads,
                        "estimate": analyze_pressure(kernel).peak.units,
                        "occupancy": occ.occupancy})
    return out


def scene(count: int = TREE_NODES, rays: int = RAYS, seed: int = 9) -> tuple:
    """(nodes, rays): a 4-ary tree whose interior nodes have random child masks, and coherent
    rays (origins rising with the thread index, as neighbouring pixels are near each other)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    nodes = np.zeros((count, 2), np.uint32)
    for i in range(count):
        if 4 * i + 4 < count:
            nodes[i] = (4 * i + 1, rng.integers(1, 16))
    r = np.zeros((rays, 4), np.float32)
    r[:, 0] = np.linspace(-300.0, 0.0, rays)                   # origin
    r[:, 1] = 1.0                                               # 1 / direction
    r[:, 2], r[:, 3] = 0.0, 1000.0                              # tmin, tmax
    return nodes, r


def memory_figures(depth: int, target: str = TARGET) -> list:
    """Per variant at ``depth``: ptxas's registers and frame beside the interpreter's memory
    figures for :func:`scene` (the sums over the kernel's instructions by space)."""
    import numpy as np

    from ptxforge.launch.profile import profile_kernel

    nodes, rays = scene()
    out = []
    for cache in (False, True):
        for kind in KINDS:
            module = build(kind, depth, target, cache).build()
            stats = compile_ptx(module, target, backend="ptxas")[module.kernels[0].name]
            hits = np.zeros((len(rays), 2), np.uint32)
            prof = profile_kernel(module, nodes, rays, hits, grid=len(rays) // BLOCK,
                                  block=BLOCK)
            row = {"kind": kind + ("+cache" if cache else ""), "depth": depth,
                   "registers": stats.registers, "frame": stats.stack_frame,
                   "executed": prof.executed, "steps": int(hits[:, 1].sum()),
                   "branch_efficiency": prof.branch_efficiency}
            for space in ("local", "global", "shared"):
                rs = [r for r in prof.instructions if r.space == space]
                row[f"{space}_requests"] = sum(r.requests for r in rs)
                row[f"{space}_sectors"] = sum(r.sectors for r in rs)
                row[f"{space}_wavefronts"] = sum(r.wavefronts for r in rs)
                row[f"{space}_conflicts"] = sum(r.bank_conflicts for r in rs)
            out.append(row)
    return out


def _per(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "-"


def print_memory(rows: list) -> None:
    """The memory table and what it says."""
    d = rows[0]["depth"]
    print(f"memory on the PTX interpreter at depth {d}: {RAYS} coherent rays, a tree of "
          f"{TREE_NODES} nodes (profile_kernel; Nsight Compute's definitions, docs/memory.md)")
    print(f"{'stack in':16} {'regs':>4} {'frame B':>7} {'local req':>9} {'sec/req':>7} "
          f"{'global req':>10} {'sec/req':>7} {'shared req':>10} {'wf/req':>6} "
          f"{'conflicts':>9} {'warp-inst':>9}")
    for r in rows:
        print(f"{r['kind']:16} {r['registers']:>4} {r['frame']:>7} {r['local_requests']:>9} "
              f"{_per(r['local_sectors'], r['local_requests']):>7} {r['global_requests']:>10} "
              f"{_per(r['global_sectors'], r['global_requests']):>7} "
              f"{r['shared_requests']:>10} "
              f"{_per(r['shared_wavefronts'], r['shared_requests']):>6} "
              f"{r['shared_conflicts']:>9} {r['executed']:>9}")
    by = {r["kind"]: r for r in rows}
    plain, cached, shared = by["local"], by["local+cache"], by["shared"]
    print(f"lesson: the node cache takes {plain['global_requests'] - cached['global_requests']} "
          f"of {plain['global_requests']} global requests "
          f"({plain['global_sectors'] - cached['global_sectors']} of "
          f"{plain['global_sectors']} sectors) off the node pool for "
          f"{cached['shared_requests']} shared ones;")
    print(f"  the local stack makes {plain['local_requests']} local requests of "
          f"{_per(plain['local_sectors'], plain['local_requests'])} sectors (4 when a warp's "
          f"32 stack pointers agree: local memory is interleaved by lane)"
          + (", which vanish on hardware here: ptxas promoted that stack to registers "
             "(frame 0 B)" if plain["frame"] == 0 else "") + ";")
    print(f"  the shared stack turns them into {shared['shared_requests']} shared requests with "
          f"{shared['shared_conflicts']} bank conflicts (entry s of thread t is word "
          f"s * ntid + t: bank t mod 32 whatever s is), the register stack into none.")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    depths = QUICK_DEPTHS if "--quick" in argv else DEPTHS
    print(f"ray traversal with a private stack (seed 004), {TARGET}, {BLOCK} threads per block; "
          f"compile-time figures, unverified on hardware")
    print()
    rows = [r for r in figures(depths) if r["kind"] in ("local", "registers")]
    print(f"{'stack in':10} {'depth':>5} {'stack B':>7} {'ptxas regs':>10} {'estimate':>8} "
          f"{'frame B':>7} {'spill st/ld B':>13} {'occupancy':>9}")
    for r in rows:
        print(f"{r['kind']:10} {r['depth']:>5} {r['stack_bytes']:>7} {r['registers']:>10} "
              f"{r['estimate']:>8} {r['frame']:>7} {r['spill_stores']:>6}/{r['spill_loads']:<6} "
              f"{100 * r['occupancy']:>8.1f}%")
    print()
    local = [r for r in rows if r["kind"] == "local"]
    regs = [r for r in rows if r["kind"] == "registers"]
    promoted = [r["depth"] for r in local if r["frame"] == 0]
    print(f"lesson: in local memory the stack costs 4 bytes of frame per entry "
          f"({local[-1]['frame']} B at depth {local[-1]['depth']}) and about "
          f"{local[-1]['registers']} registers at any depth"
          + (f" (at depth {', '.join(map(str, promoted))} ptxas promoted it to registers)"
             if promoted else "") + ";")
    worst = regs[-1]
    spilled = next((r for r in regs if r["spill_stores"]), None)
    print(f"  in registers it costs about one register per entry ({regs[0]['registers']} at depth "
          f"{regs[0]['depth']}, {worst['registers']} at depth {worst['depth']}), trading "
          f"occupancy ({100 * regs[0]['occupancy']:.0f}% -> {100 * worst['occupancy']:.0f}%) "
          f"for the local-memory round trips;")
    if spilled is not None:
        print(f"  from depth {spilled['depth']} ptxas spills part of it back to local memory "
              f"({spilled['spill_stores']} B of stores at {spilled['registers']} registers).")
    print("  The seed's '32 entries = 32 registers on a GPU with 256 registers per SM' is off: an "
          "SM has 65536.")
    print()
    print_memory(memory_figures(QUICK_MEMORY_DEPTH if "--quick" in argv else MEMORY_DEPTH))
    return 0


if __name__ == "__main__":
    sys.exit(main())
