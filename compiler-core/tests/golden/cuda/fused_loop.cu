// %fusion.3 (loop): 6 threads
// fuses %param_1.2, %param_0.1, %s, %t
extern "C" __global__ void __launch_bounds__(256) hs_k0(unsigned char* arena) {
  const float* in0 = (const float*)(arena + 0);
  const float* in1 = (const float*)(arena + 256);
  float* out0 = (float*)(arena + 512);
  for (long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; t0 < 6LL; t0 += (long long)gridDim.x * blockDim.x) {
    const int t = (int)t0;
    const int v1 = t % 3;
    const int q1 = t / 3;
    const int v0 = q1;
    const float e0 = in0[(v1 + (v0 * 3))];
    const float e1 = in1[v1];
    const float e2 = (e0 + e1);
    const float e3 = hs_max(e2, e0);
    out0[t] = e3;
  }
}
