// %fusion.5 (loop): 4096 threads, each 4 neighbouring elements
// fuses %param_2.3, %param_3.4, %m, %param_0.1, %s, %param_1.2, %t
extern "C" __global__ void __launch_bounds__(256) hs_k0(unsigned char* arena) {
  const float* in0 = (const float*)(arena + 0);
  const float* in1 = (const float*)(arena + 65536);
  const float* in2 = (const float*)(arena + 131072);
  const float* in3 = (const float*)(arena + 132096);
  float* out0 = (float*)(arena + 132352);
  for (long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; t0 < 4096LL; t0 += (long long)gridDim.x * blockDim.x) {
    const int t = (int)t0;
    const int w1 = t % 64;
    const int q1 = t / 64;
    const int v0 = q1;
    const int v1 = w1 * 4;
    const float4 quad0 = *(const float4*)&in0[(v1 + (v0 * 256))];
    const float4 quad1 = *(const float4*)&in1[(v1 + (v0 * 256))];
    const float4 quad2 = *(const float4*)&in2[v1];
    float out0_0, out0_1, out0_2, out0_3;
    {
      const int v1 = w1 * 4 + 0;
      const float e2 = (quad0.x * quad1.x);
      const float e4 = (e2 + quad2.x);
      const float e5 = in3[v0];
      const float e6 = (e4 - e5);
      out0_0 = e6;
    }
    {
      const int v1 = w1 * 4 + 1;
      const float e2 = (quad0.y * quad1.y);
      const float e4 = (e2 + quad2.y);
      const float e5 = in3[v0];
      const float e6 = (e4 - e5);
      out0_1 = e6;
    }
    {
      const int v1 = w1 * 4 + 2;
      const float e2 = (quad0.z * quad1.z);
      const float e4 = (e2 + quad2.z);
      const float e5 = in3[v0];
      const float e6 = (e4 - e5);
      out0_2 = e6;
    }
    {
      const int v1 = w1 * 4 + 3;
      const float e2 = (quad0.w * quad1.w);
      const float e4 = (e2 + quad2.w);
      const float e5 = in3[v0];
      const float e6 = (e4 - e5);
      out0_3 = e6;
    }
    *(float4*)&out0[((v0 * 256) + v1)] = make_float4(out0_0, out0_1, out0_2, out0_3);
  }
}
