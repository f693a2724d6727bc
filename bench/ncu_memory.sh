#!/bin/sh
# On the GPU machine: write the kernels and host program (bench/ncu_memory.py --write), build
# them and profile them with Nsight Compute.  Writes $OUT/ncu.csv, $OUT/env.txt.
OUT=${OUT:-.}
{ nvidia-smi -L; which nvcc ncu; ls -d /usr/local/cuda*/bin /opt/nvidia/nsight-compute* 2>/dev/null; } > "$OUT/env.txt" 2>&1
PATH=$PATH:/usr/local/cuda/bin:$(ls -d /opt/nvidia/nsight-compute/*/ 2>/dev/null | tail -1)
for d in /usr/local/cuda*/nsight-compute*; do PATH=$PATH:$d; done
NVCC=$(command -v nvcc) NCU=$(command -v ncu)
echo "nvcc=$NVCC ncu=$NCU" >> "$OUT/env.txt"
[ -n "$NVCC" ] && [ -n "$NCU" ] || { echo "missing nvcc or ncu"; cat "$OUT/env.txt"; exit 3; }
python3 bench/ncu_memory.py --write /tmp/ncu_memory.cu >> "$OUT/env.txt" 2>&1 || { cat "$OUT/env.txt"; exit 4; }
"$NVCC" -arch=sm_90 -lineinfo -o /tmp/ncu_memory /tmp/ncu_memory.cu >> "$OUT/env.txt" 2>&1 || { cat "$OUT/env.txt"; exit 4; }
M=l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
timeout 200 "$NCU" --csv --metrics "$M" /tmp/ncu_memory > "$OUT/ncu.csv" 2> "$OUT/ncu.err"; echo "ncu rc=$?"
timeout 120 "$NCU" --csv --metrics smsp__sass_average_branch_targets_threads_uniform.pct /tmp/ncu_memory > "$OUT/ncu_branch.csv" 2> "$OUT/ncu_branch.err"; echo "ncu2 rc=$?"
tail -5 "$OUT/ncu.err" "$OUT/ncu.csv" "$OUT/ncu_branch.err"
