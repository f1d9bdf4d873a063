// %fusion.3 (reduction(row)): 1 blocks of 256, each a 64x64 block of the dot's outputs
// fuses %param_0.1, %param_1.2, %d.part, %z, %r
extern "C" __global__ void __launch_bounds__(256) hs_k0(unsigned char* arena) {
  const float* in0 = (const float*)(arena + 0);
  const float* in1 = (const float*)(arena + 2560);
  float* out0 = (float*)(arena + 5632);
  __shared__ float dot_a[1024];
  __shared__ float dot_b[1024];
  for (long long t0 = blockIdx.x; t0 < 1LL; t0 += gridDim.x) {
    const int t = (int)t0;
    const int w1 = t % 1;
    const int q1 = t / 1;
    const int w0 = q1;
    const int tx = ((int)threadIdx.x % 16);
    const int ty = ((int)threadIdx.x / 16);
    const int th = (int)threadIdx.x;
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
    for (int kt = 0; kt < 20; kt += 16) {
      for (int r = 0; r < 4; ++r) {
        {
          const int s = (th + (r * 256));
          const int kk = (s % 16);
          const int rc = (s / 16);
          const int v2 = min(max((kt + kk), 0), 19);
          const int v0 = min(max(((w0 * 64) + rc), 0), 31);
          const int v1 = min(max(((w1 * 64) + 0), 0), 35);
          const float e0 = in0[(v2 + (v0 * 20))];
          dot_a[((kk * 64) + rc)] = e0;
        }
      }
      for (int r = 0; r < 4; ++r) {
        {
          const int s = (th + (r * 256));
          const int kk = (s / 64);
          const int rc = (s % 64);
          const int v2 = min(max((kt + kk), 0), 19);
          const int v1 = min(max(((w1 * 64) + rc), 0), 35);
          const int v0 = min(max(((w0 * 64) + 0), 0), 31);
          const float e1 = in1[(v1 + (v2 * 36))];
          dot_b[((kk * 64) + rc)] = e1;
        }
      }
      __syncthreads();
      for (int kk = 0; kk < 16; ++kk) {
        if (kt + kk < 20) {
          float a0 = dot_a[((kk * 64) + ((ty * 4) + 0))];
          float a1 = dot_a[((kk * 64) + ((ty * 4) + 1))];
          float a2 = dot_a[((kk * 64) + ((ty * 4) + 2))];
          float a3 = dot_a[((kk * 64) + ((ty * 4) + 3))];
          float b0 = dot_b[((kk * 64) + ((tx * 4) + 0))];
          float b1 = dot_b[((kk * 64) + ((tx * 4) + 1))];
          float b2 = dot_b[((kk * 64) + ((tx * 4) + 2))];
          float b3 = dot_b[((kk * 64) + ((tx * 4) + 3))];
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
      }
      __syncthreads();
    }
    {
      const int p0 = ((ty * 4) + 0);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 0);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_0_0, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 0);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 1);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_0_1, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 0);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 2);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_0_2, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 0);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 3);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_0_3, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 1);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 0);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_1_0, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 1);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 1);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_1_1, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 1);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 2);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_1_2, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 1);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 3);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_1_3, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 2);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 0);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_2_0, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 2);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 1);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_2_1, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 2);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 2);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_2_2, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 2);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 3);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_2_3, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 3);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 0);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_3_0, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 3);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 1);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_3_1, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 3);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 2);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_3_2, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
    {
      const int p0 = ((ty * 4) + 3);
      const int v0 = ((w0 * 64) + p0);
      const int p1 = ((tx * 4) + 3);
      const int v1 = ((w1 * 64) + p1);
      if (v0 < 32 && v1 < 36) {
        const float e6 = hs_max(acc_3_3, 0.0f);
        out0[((v0 * 36) + v1)] = e6;
      }
    }
  }
}
