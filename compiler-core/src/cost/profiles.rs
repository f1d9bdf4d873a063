//! Built-in hardware profiles: peak FLOP/s per dtype class, memory bandwidth and kernel
//! launch overhead for the chips hloscope shows costs for.
//!
//! Every number comes from the vendor's datasheet (named beside it). Tensor-core numbers
//! are the *dense* ones: NVIDIA datasheets print the 2:4-sparsity figure first, which is
//! twice the dense rate. Launch overheads are not on datasheets; they are our round
//! estimates of the time an empty kernel takes from launch to completion, and
//! [`Profile::measured`] exists so that a run on real hardware can replace them.

use super::Profile;
use std::borrow::Cow;

const T: f64 = 1e12;
const G: f64 = 1e9;

/// GPU kernel launch overhead: an empty CUDA kernel takes a few microseconds end to end
/// (launch latency plus the tail of the previous kernel). Our estimate, not a datasheet
/// number.
const GPU_LAUNCH_S: f64 = 4e-6;

/// NVIDIA A100 SXM4 80GB ("NVIDIA A100 Tensor Core GPU" datasheet, 2021).
pub const A100: Profile = Profile {
    name: Cow::Borrowed("A100 SXM 80GB"),
    // Datasheet: FP32 19.5 TFLOPS.
    peak_f32: 19.5 * T,
    // Datasheet: BF16/FP16 Tensor Core 312 TFLOPS (624 with sparsity).
    peak_f16_tensor: 312.0 * T,
    // Datasheet: FP64 9.7 TFLOPS (19.5 on FP64 Tensor Cores, which only DGEMM uses).
    peak_f64: 9.7 * T,
    // Datasheet: GPU memory bandwidth 2,039 GB/s (80GB SXM).
    mem_bandwidth: 2039.0 * G,
    launch_overhead_s: GPU_LAUNCH_S,
    measured: false,
};

/// NVIDIA H100 SXM5 80GB ("NVIDIA H100 Tensor Core GPU" datasheet).
pub const H100_SXM: Profile = Profile {
    name: Cow::Borrowed("H100 SXM"),
    // Datasheet: FP32 67 TFLOPS.
    peak_f32: 67.0 * T,
    // Datasheet: BF16/FP16 Tensor Core 1,979 TFLOPS with sparsity, so 989.5 dense.
    peak_f16_tensor: 989.5 * T,
    // Datasheet: FP64 34 TFLOPS.
    peak_f64: 34.0 * T,
    // Datasheet: GPU memory bandwidth 3.35 TB/s.
    mem_bandwidth: 3350.0 * G,
    launch_overhead_s: GPU_LAUNCH_S,
    measured: false,
};

/// NVIDIA H200 SXM 141GB ("NVIDIA H200 Tensor Core GPU" datasheet): H100's compute with
/// HBM3e memory.
pub const H200: Profile = Profile {
    name: Cow::Borrowed("H200 SXM"),
    // Datasheet: FP32 67 TFLOPS.
    peak_f32: 67.0 * T,
    // Datasheet: BF16/FP16 Tensor Core 1,979 TFLOPS with sparsity, so 989.5 dense.
    peak_f16_tensor: 989.5 * T,
    // Datasheet: FP64 34 TFLOPS.
    peak_f64: 34.0 * T,
    // Datasheet: GPU memory bandwidth 4.8 TB/s.
    mem_bandwidth: 4800.0 * G,
    launch_overhead_s: GPU_LAUNCH_S,
    measured: false,
};

/// NVIDIA L4 24GB ("NVIDIA L4 Tensor Core GPU" datasheet).
pub const L4: Profile = Profile {
    name: Cow::Borrowed("L4"),
    // Datasheet: FP32 30.3 TFLOPS.
    peak_f32: 30.3 * T,
    // Datasheet: BF16/FP16 Tensor Core 242 TFLOPS with sparsity, so 121 dense.
    peak_f16_tensor: 121.0 * T,
    // Not on the datasheet; Ada (AD104) runs FP64 at 1/64 of the FP32 rate.
    peak_f64: 30.3 * T / 64.0,
    // Datasheet: GPU memory bandwidth 300 GB/s.
    mem_bandwidth: 300.0 * G,
    launch_overhead_s: GPU_LAUNCH_S,
    measured: false,
};

/// NVIDIA GeForce RTX 4090 ("NVIDIA Ada GPU Architecture" whitepaper, appendix table).
pub const RTX_4090: Profile = Profile {
    name: Cow::Borrowed("RTX 4090"),
    // Whitepaper: peak FP32 82.6 TFLOPS.
    peak_f32: 82.6 * T,
    // Whitepaper: peak FP16 Tensor TFLOPS with FP32 accumulate 165.2 (dense), the rate
    // XLA's f16/bf16 dots (which accumulate in f32) get.
    peak_f16_tensor: 165.2 * T,
    // Whitepaper: FP64 at 1/64 of FP32, 1.3 TFLOPS.
    peak_f64: 82.6 * T / 64.0,
    // Whitepaper: memory bandwidth 1,008 GB/s (21 Gbps GDDR6X, 384-bit).
    mem_bandwidth: 1008.0 * G,
    launch_overhead_s: GPU_LAUNCH_S,
    measured: false,
};

/// A generic desktop CPU, derived from a typical part rather than one datasheet: 8 cores
/// at 3 GHz, each with two 256-bit FMA units (AVX2: 8 f32 lanes x 2 FLOPs x 2 units =
/// 32 f32 FLOPs per cycle), and dual-channel DDR5-4800 (2 x 8 bytes x 4800 MT/s).
pub const GENERIC_CPU: Profile = Profile {
    name: Cow::Borrowed("generic CPU"),
    // 8 cores x 3e9 cycles/s x 32 FLOPs/cycle.
    peak_f32: 8.0 * 3.0 * G * 32.0,
    // No tensor units: f16/bf16 are widened to f32 and run at the f32 rate.
    peak_f16_tensor: 8.0 * 3.0 * G * 32.0,
    // Half the f32 lanes.
    peak_f64: 8.0 * 3.0 * G * 16.0,
    // 2 channels x 8 bytes x 4.8e9 transfers/s = 76.8 GB/s.
    mem_bandwidth: 76.8 * G,
    // Handing a kernel to a thread pool and joining it: about a microsecond (estimate).
    launch_overhead_s: 1e-6,
    measured: false,
};

/// All built-in profiles, in the order the UI lists them.
pub fn all() -> Vec<Profile> {
    vec![A100, H100_SXM, H200, L4, RTX_4090, GENERIC_CPU]
}

/// The built-in profile called `name` (case-insensitive; `h100`, `rtx4090`, `cpu` also
/// work).
pub fn by_name(name: &str) -> Option<Profile> {
    let key: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    let short = match key.as_str() {
        "a100" | "a100sxm" | "a100sxm80gb" => A100,
        "h100" | "h100sxm" => H100_SXM,
        "h200" | "h200sxm" => H200,
        "l4" => L4,
        "rtx4090" | "4090" => RTX_4090,
        "cpu" | "genericcpu" => GENERIC_CPU,
        _ => return None,
    };
    Some(short)
}
