// WENO-style reconstruction whose coefficients are picked at run time by the order,
// which the compiler lowers to selp cascades over double-precision literals.
__device__ __forceinline__ double coeff(int order, int j)
{
    double c3 = j == 0 ? -1.0 / 6.0 : j == 1 ? 5.0 / 6.0 : 1.0 / 3.0;
    double c5 = j == 0 ? 1.0 / 30.0 : j == 1 ? -13.0 / 60.0 : 47.0 / 60.0;
    double c7 = j == 0 ? -1.0 / 140.0 : j == 1 ? 5.0 / 84.0 : -101.0 / 420.0;
    return order == 3 ? c3 : order == 5 ? c5 : order == 7 ? c7 : 0.5;
}

__device__ __forceinline__ double smoothness(double a, double b, double c, int order)
{
    double k1 = order == 3 ? 13.0 / 12.0 : order == 5 ? 1.0833 : 1.2;
    double k2 = order == 3 ? 0.25 : order == 5 ? 0.3 : 0.35;
    double d1 = a - 2.0 * b + c;
    double d2 = a - c;
    return k1 * d1 * d1 + k2 * d2 * d2;
}

extern "C" __global__ void weno5_reconstruct(const double* __restrict__ q, double* __restrict__ face,
                                             const int* __restrict__ order_map, int n, int clip)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 2 || i >= n - 2)
        return;
    int order = order_map[i];
    double s0 = q[i - 2], s1 = q[i - 1], s2 = q[i], s3 = q[i + 1], s4 = q[i + 2];
    double p0 = coeff(order, 0) * s0 + coeff(order, 1) * s1 + coeff(order, 2) * s2;
    double p1 = coeff(order, 2) * s1 + coeff(order, 1) * s2 + coeff(order, 0) * s3;
    double p2 = coeff(order, 1) * s2 + coeff(order, 0) * s3 + coeff(order, 2) * s4;
    double b0 = smoothness(s0, s1, s2, order);
    double b1 = smoothness(s1, s2, s3, order);
    double b2 = smoothness(s2, s3, s4, order);
    double g0 = order == 3 ? 0.1 : order == 5 ? 0.2 : 0.3;
    double g2 = order == 3 ? 0.3 : order == 5 ? 0.2 : 0.1;
    double a0 = g0 / ((b0 + 1e-6) * (b0 + 1e-6));
    double a1 = 0.6 / ((b1 + 1e-6) * (b1 + 1e-6));
    double a2 = g2 / ((b2 + 1e-6) * (b2 + 1e-6));
    double w0 = i < clip ? 0.0 : a0;
    double w2 = i > n - clip ? 0.0 : a2;
    double r = (w0 * p0 + a1 * p1 + w2 * p2) / (w0 + a1 + w2);
    face[i] = order > 1 ? r : s2;
}
