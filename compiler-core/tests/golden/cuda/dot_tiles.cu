// %fusion.3 (reduction(row)): 72 threads, each a 4x4 block of the dot's outputs
// fuses %param_0.1, %param_1.2, %d.part, %z, %r
extern "C" __global__ void __launch_bounds__(256) hs_k0(unsigned char* arena) {
  const float* in0 = (const float*)(arena + 0);
  const float* in1 = (const float*)(arena + 1024);
  float* out0 = (float*)(arena + 2304);
  for (long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; t0 < 72LL; t0 += (long long)gridDim.x * blockDim.x) {
    const int t = (int)t0;
    const int w1 = t % 9;
    const int q1 = t / 9;
    const int w0 = q1;
    float acc_0_0 = 0.0f;
    float acc_0_1 = 0.0f;
    float acc_0_2 = 0.0f;
    float acc_0_3 = 0.0f;
    float acc_1_0 = 0.0f;
    float acc_1_1 = 0.0f;
    float acc_1_2 = 0.0f;
    float acc_1_3 = 0.0f;
    float acc_2_0 = 0.0f;
    float acc_2_1 = 0.0f;
    float acc_2_2 = 0.0f;
    float acc_2_3 = 0.0f;
    float acc_3_0 = 0.0f;
    float acc_3_1 = 0.0f;
    float acc_3_2 = 0.0f;
    float acc_3_3 = 0.0f;
    for (int v2 = 0; v2 < 8; ++v2) {
      float a0;
      {
        const int v0 = min(max(((w0 * 4) + 0), 0), 31);
        const int v1 = min(max(((w1 * 4) + 0), 0), 35);
        const float e0 = in0[(v2 + (v0 * 8))];
        a0 = e0;
      }
      float a1;
      {
        const int v0 = min(max(((w0 * 4) + 1), 0), 31);
        const int v1 = min(max(((w1 * 4) + 0), 0), 35);
        const float e0 = in0[(v2 + (v0 * 8))];
        a1 = e0;
      }
      float a2;
      {
        const int v0 = min(max(((w0 * 4) + 2), 0), 31);
        const int v1 = min(max(((w1 * 4) + 0), 0), 35);
        const float e0 = in0[(v2 + (v0 * 8))];
        a2 = e0;
      }
      float a3;
      {
        const int v0 = min(max(((w0 * 4) + 3), 0), 31);
        const int v1 = min(max(((w1 * 4) + 0), 0), 35);
        const float e0 = in0[(v2 + (v0 * 8))];
        a3 = e0;
      }
      float b0;
      {
        const int v1 = min(max(((w1 * 4) + 0), 0), 35);
        const int v0 = min(max(((w0 * 4) + 0), 0), 31);
        const float e1 = in1[(v1 + (v2 * 36))];
        b0 = e1;
      }
      float b1;
      {
        const int v1 = min(max(((w1 * 4) + 1), 0), 35);
        const int v0 = min(max(((w0 * 4) + 0), 0), 31);
        const float e1 = in1[(v1 + (v2 * 36))];
        b1 = e1;
      }
      float b2;
      {
        const int v1 = min(max(((w1 * 4) + 2), 0), 35);
        const int v0 = min(max(((w0 * 4) + 0), 0), 31);
        const float e1 = in1[(v1 + (v2 * 36))];
        b2 = e1;
      }
      float b3;
      {
        const int v1 = min(max(((w1 * 4) + 3), 0), 35);
        const int v0 = min(max(((w0 * 4) + 0), 0), 31);
        const float e1 = in1[(v1 + (v2 * 36))];
        b3 = e1;
      }
      {
        const float e2 = (a0 * b0);
        const float e9 = (acc_0_0 + e2);
        acc_0_0 = e9;
      }
      {
        const float e2 = (a0 * b1);
        const float e9 = (acc_0_1 + e2);
        acc_0_1 = e9;
      }
      {
        const float e2 = (a0 * b2);
        const float e9 = (acc_0_2 + e2);
        acc_0_2 = e9;
      }
      {
        const float e2 = (a0 * b3);
        const float e9 = (acc_0_3 + e2);
        acc_0_3 = e9;
      }
      {
        const float e2 = (a1 * b0);
        const float e9 = (acc_1_0 + e2);
        acc_1_0 = e9;
      }
      {
        const float e2 = (a1 * b1);
        const float e9 = (acc_1_1 + e2);
        acc_1_1 = e9;
      }
      {
        const float e2 = (a1 * b2);
        const float e9 = (acc_1_2 + e2);
        acc_1_2 = e9;
      }
      {
        const float e2 = (a1 * b3);
        const float e9 = (acc_1_3 + e2);
        acc_1_3 = e9;
      }
      {
        const float e2 = (a2 * b0);
        const float e9 = (acc_2_0 + e2);
        acc_2_0 = e9;
      }
      {
        const float e2 = (a2 * b1);
        const float e9 = (acc_2_1 + e2);
        acc_2_1 = e9;
      }
      {
        const float e2 = (a2 * b2);
        const float e9 = (acc_2_2 + e2);
        acc_2_2 = e9;
      }
      {
        const float e2 = (a2 * b3);
        const float e9 = (acc_2_3 + e2);
        acc_2_3 = e9;
      }
      {
        const float e2 = (a3 * b0);
        const float e9 = (acc_3_0 + e2);
        acc_3_0 = e9;
      }
      {
        const float e2 = (a3 * b1);
        const float e9 = (acc_3_1 + e2);
        acc_3_1 = e9;
      }
      {
        const float e2 = (a3 * b2);
        const float e9 = (acc_3_2 + e2);
        acc_3_2 = e9;
      }
      {
        const float e2 = (a3 * b3);
        const float e9 = (acc_3_3 + e2);
        acc_3_3 = e9;
      }
    }
    {
      const int v0 = ((w0 * 4) + 0);
      const int v1 = ((w1 * 4) + 0);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_0_0, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 0);
      const int v1 = ((w1 * 4) + 1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_0_1, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 0);
      const int v1 = ((w1 * 4) + 2);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_0_2, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 0);
      const int v1 = ((w1 * 4) + 3);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_0_3, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 1);
      const int v1 = ((w1 * 4) + 0);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_1_0, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 1);
      const int v1 = ((w1 * 4) + 1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_1_1, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 1);
      const int v1 = ((w1 * 4) + 2);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_1_2, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 1);
      const int v1 = ((w1 * 4) + 3);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_1_3, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 2);
      const int v1 = ((w1 * 4) + 0);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_2_0, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 2);
      const int v1 = ((w1 * 4) + 1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_2_1, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 2);
      const int v1 = ((w1 * 4) + 2);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_2_2, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 2);
      const int v1 = ((w1 * 4) + 3);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_2_3, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 3);
      const int v1 = ((w1 * 4) + 0);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_3_0, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 3);
      const int v1 = ((w1 * 4) + 1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_3_1, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 3);
      const int v1 = ((w1 * 4) + 2);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_3_2, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int v0 = ((w0 * 4) + 3);
      const int v1 = ((w1 * 4) + 3);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_3_3, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
  }
}
