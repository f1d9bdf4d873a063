// %fusion.3 (loop): 4096 threads, each 4 neighbouring elements
// fuses %param_0.1, %param_1.2, %m, %s
extern "C" __global__ void __launch_bounds__(256) hs_k0(unsigned char* arena) {
  const unsigned short* in0 = (const unsigned short*)(arena + 0);
  const unsigned short* in1 = (const unsigned short*)(arena + 32768);
  unsigned short* out0 = (unsigned short*)(arena + 65536);
  for (long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; t0 < 4096LL; t0 += (long long)gridDim.x * blockDim.x) {
    const int t = (int)t0;
    const int w1 = t % 64;
    const int q1 = t / 64;
    const int v0 = q1;
    const int v1 = w1 * 4;
    const ushort4 quad0 = *(const ushort4*)&in0[(v1 + (v0 * 256))];
    const ushort4 quad1 = *(const ushort4*)&in1[(v1 + (v0 * 256))];
    unsigned short out0_0, out0_1, out0_2, out0_3;
    {
      const int v1 = w1 * 4 + 0;
      const float e2 = hs_f16((hs_from_f16(quad0.x) * hs_from_f16(quad1.x)));
      const float e3 = hs_f16((e2 + hs_from_f16(quad0.x)));
      out0_0 = hs_f16_bits(e3);
    }
    {
      const int v1 = w1 * 4 + 1;
      const float e2 = hs_f16((hs_from_f16(quad0.y) * hs_from_f16(quad1.y)));
      const float e3 = hs_f16((e2 + hs_from_f16(quad0.y)));
      out0_1 = hs_f16_bits(e3);
    }
    {
      const int v1 = w1 * 4 + 2;
      const float e2 = hs_f16((hs_from_f16(quad0.z) * hs_from_f16(quad1.z)));
      const float e3 = hs_f16((e2 + hs_from_f16(quad0.z)));
      out0_2 = hs_f16_bits(e3);
    }
    {
      const int v1 = w1 * 4 + 3;
      const float e2 = hs_f16((hs_from_f16(quad0.w) * hs_from_f16(quad1.w)));
      const float e3 = hs_f16((e2 + hs_from_f16(quad0.w)));
      out0_3 = hs_f16_bits(e3);
    }
    *(ushort4*)&out0[((v0 * 256) + v1)] = make_ushort4(out0_0, out0_1, out0_2, out0_3);
  }
}
