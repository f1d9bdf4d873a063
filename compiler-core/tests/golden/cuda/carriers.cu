// %j (loop): 5 threads
// fuses %i, %j
extern "C" __global__ void __launch_bounds__(256) hs_k0(unsigned char* arena) {
  const signed char* in0 = (const signed char*)(arena + 512);
  signed char* out0 = (signed char*)(arena + 1280);
  for (long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; t0 < 5LL; t0 += (long long)gridDim.x * blockDim.x) {
    const int t = (int)t0;
    const int v0 = t;
    const int e0 = in0[v0];
    const int e1 = (int)(signed char)((int)((unsigned)e0 * (unsigned)e0));
    out0[t] = (signed char)e1;
  }
}

// %fusion.3 (loop): 5 threads
// fuses %param_0.1, %param_1.2, %m, %s
extern "C" __global__ void __launch_bounds__(256) hs_k1(unsigned char* arena) {
  const unsigned short* in0 = (const unsigned short*)(arena + 0);
  const unsigned short* in1 = (const unsigned short*)(arena + 256);
  unsigned short* out0 = (unsigned short*)(arena + 1536);
  for (long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; t0 < 5LL; t0 += (long long)gridDim.x * blockDim.x) {
    const int t = (int)t0;
    const int v0 = t;
    const float e0 = hs_from_f16(in0[v0]);
    const float e1 = hs_from_f16(in1[v0]);
    const float e2 = hs_f16((e0 * e1));
    const float e3 = hs_f16((e2 + e0));
    out0[t] = hs_f16_bits(e3);
  }
}

// %e (loop): 5 threads
// fuses %d, %e
extern "C" __global__ void __launch_bounds__(256) hs_k2(unsigned char* arena) {
  const double* in0 = (const double*)(arena + 768);
  double* out0 = (double*)(arena + 1792);
  for (long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; t0 < 5LL; t0 += (long long)gridDim.x * blockDim.x) {
    const int t = (int)t0;
    const int v0 = t;
    const double e0 = in0[v0];
    const double e1 = (e0 / e0);
    out0[t] = e1;
  }
}

// %q (loop): 5 threads
// fuses %l, %q
extern "C" __global__ void __launch_bounds__(256) hs_k3(unsigned char* arena) {
  const long long* in0 = (const long long*)(arena + 1024);
  long long* out0 = (long long*)(arena + 2048);
  for (long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; t0 < 5LL; t0 += (long long)gridDim.x * blockDim.x) {
    const int t = (int)t0;
    const int v0 = t;
    const long long e0 = in0[v0];
    const long long e1 = hs_div(e0, e0);
    out0[t] = e1;
  }
}
