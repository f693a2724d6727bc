// Tree and DAG traversals with a private stack array (local memory).
struct Node { float lo, hi; int left, right; int leaf_value; };

extern "C" __global__ void bvh_count_hits(const Node* nodes, const float* queries, int* hits, int nq)
{
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= nq)
        return;
    float x = queries[q];
    int stack[32];
    int sp = 0;
    stack[sp++] = 0;
    int count = 0;
    while (sp > 0) {
        int id = stack[--sp];
        Node nd = nodes[id];
        if (x < nd.lo || x > nd.hi)
            continue;
        if (nd.left < 0) {
            count += nd.leaf_value;
            continue;
        }
        if (sp < 31) stack[sp++] = nd.left;
        if (sp < 31) stack[sp++] = nd.right;
    }
    hits[q] = count;
}

extern "C" __global__ void dag_longest_path(const int* row_start, const int* edges, const float* weight,
                                            float* best, int num_nodes, int source)
{
    // Depth-first walk from a per-thread source, keeping the path in a private array.
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int start = (source + t) % num_nodes;
    int node_stack[24];
    int edge_stack[24];
    float dist_stack[24];
    int depth = 0;
    node_stack[0] = start;
    edge_stack[0] = row_start[start];
    dist_stack[0] = 0.0f;
    float longest = 0.0f;
    while (depth >= 0) {
        int v = node_stack[depth];
        int e = edge_stack[depth];
        if (e < row_start[v + 1] && depth < 23) {
            edge_stack[depth] = e + 1;
            int w = edges[e];
            float d = dist_stack[depth] + weight[e];
            longest = fmaxf(longest, d);
            ++depth;
            node_stack[depth] = w;
            edge_stack[depth] = row_start[w];
            dist_stack[depth] = d;
        } else {
            --depth;
        }
    }
    best[t] = longest;
}
