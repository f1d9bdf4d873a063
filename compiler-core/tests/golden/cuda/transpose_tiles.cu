// %fusion.3 (loop): 18 blocks of 256, each a 32x32 tile
// fuses %param_0.1, %param_1.2, %m, %s
extern "C" __global__ void __launch_bounds__(256) hs_k0(unsigned char* arena) {
  const float* in0 = (const float*)(arena + 0);
  const float* in1 = (const float*)(arena + 37888);
  float* out0 = (float*)(arena + 75776);
  __shared__ float tile0[1056];
  for (long long t0 = blockIdx.x; t0 < 18LL; t0 += gridDim.x) {
    const int t = (int)t0;
    const int w2 = t % 3;
    const int q2 = t / 3;
    const int w1 = q2 % 2;
    const int q1 = q2 / 2;
    const int v0 = q1;
    const int lx = ((int)threadIdx.x % 32);
    const int ly = ((int)threadIdx.x / 32);
    for (int r = 0; r < 4; ++r) {
      {
        const int row = (ly + (r * 8));
        const int v2 = min(max(((w2 * 32) + row), 0), 69);
        const int v1 = min(max(((w1 * 32) + lx), 0), 44);
        const float e0 = in0[(v1 + ((v0 * 3150) + (v2 * 45)))];
        tile0[((row * 33) + lx)] = e0;
      }
    }
    __syncthreads();
    for (int r = 0; r < 4; ++r) {
      {
        const int row = (ly + (r * 8));
        const int v2 = ((w2 * 32) + lx);
        const int v1 = ((w1 * 32) + row);
        if (v1 < 45 && v2 < 70) {
          const float e1 = in1[(v2 + ((v0 * 3150) + (v1 * 70)))];
          const float e2 = (tile0[((lx * 33) + row)] * e1);
          const float e3 = (e2 + tile0[((lx * 33) + row)]);
          out0[(((v0 * 3150) + (v1 * 70)) + v2)] = e3;
        }
      }
    }
    __syncthreads();
  }
}
