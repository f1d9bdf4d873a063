//! Interpreter: `rng_bit_generator` (bit-exact with XLA) and `rng` (hloscope's own
//! deterministic generator).
//!
//! rng_bit_generator follows XLA's expansion (`rng_bit_generator_expander` and
//! `lib/prng`): state[0] is the key.
//!
//! THREE_FRY (also DEFAULT here): Threefry-2x32 with 20 rounds on 64-bit counters
//! `state[1] + i`. 64-bit outputs take one counter per element (low word first); 32-bit
//! outputs split the shape in two along its first even dimension (or its largest one)
//! and give the two 32-bit words of one counter to neighbouring elements along it;
//! 8/16-bit outputs truncate the 32-bit ones. The new state is [key, state[1] + counters].
//!
//! PHILOX: Philox-4x32 with 10 rounds on a 128-bit counter (state[1], state[2]) for a
//! 3-word state, or (state[1], state[0]) for a 2-word one; each counter gives four 32-bit
//! or two 64-bit outputs in order. The new state advances the counter.
//!
//! XLA's CPU backend picks Philox for DEFAULT (checked with JAX 0.10); this interpreter
//! follows the IR's convention (DEFAULT = Threefry), so DEFAULT bits differ from XLA CPU's.
//!
//! `rng` has no reference bits (the spec leaves it implementation-defined). hloscope
//! draws 32-bit (64-bit for f64/s64/u64) Threefry words keyed by a hash of the
//! instruction's name, with the interpreter's loop-iteration count as the counter base,
//! so a run is reproducible and a `rng` inside a loop changes between iterations.
//! UNIFORM maps the bits to [a, b): floats take the top mantissa bits as a fraction in
//! [0, 1), integers take `bits mod (b - a)`. NORMAL uses the Box-Muller transform with
//! mean a and standard deviation b.

use super::index::{array_arg, result_shape, result_shapes};
use super::Interpreter;
use crate::ir::literal::{float_from_bits, round_float, wrap_signed, wrap_unsigned};
use crate::ir::{Data, ElementType, Instruction, Literal, Op, RngAlgorithm, RngDistribution, Scalar, Shape, Value};

/// Threefry-2x32, 20 rounds, as in Salmon et al. (and XLA).
fn threefry2x32(key: u64, counter: u64) -> (u32, u32) {
    const ROT: [u32; 8] = [13, 15, 26, 6, 17, 29, 16, 24];
    let ks = [key as u32, (key >> 32) as u32, 0x1BD1_1BDA ^ key as u32 ^ (key >> 32) as u32];
    let mut x = [(counter as u32).wrapping_add(ks[0]), ((counter >> 32) as u32).wrapping_add(ks[1])];
    for block in 0..5u32 {
        for r in 0..4 {
            let rot = ROT[(block as usize % 2) * 4 + r];
            x[0] = x[0].wrapping_add(x[1]);
            x[1] = x[1].rotate_left(rot) ^ x[0];
        }
        // Key injection after every four rounds.
        let i = block as usize + 1;
        x[0] = x[0].wrapping_add(ks[i % 3]);
        x[1] = x[1].wrapping_add(ks[(i + 1) % 3]).wrapping_add(i as u32);
    }
    (x[0], x[1])
}

/// Philox-4x32, 10 rounds (XLA's constants and word order).
fn philox4x32(ctr: [u32; 4], key: u64) -> [u32; 4] {
    const W_A: u32 = 0x9E37_79B9;
    const W_B: u32 = 0xBB67_AE85;
    const M_A: u64 = 0xD251_1F53;
    const M_B: u64 = 0xCD9E_8D57;
    let mut k = [key as u32, (key >> 32) as u32];
    let mut x = ctr;
    for _ in 0..10 {
        let p0 = x[0] as u64 * M_A;
        let p1 = x[2] as u64 * M_B;
        x = [(p1 >> 32) as u32 ^ x[1] ^ k[0], p1 as u32, (p0 >> 32) as u32 ^ x[3] ^ k[1], p0 as u32];
        k = [k[0].wrapping_add(W_A), k[1].wrapping_add(W_B)];
    }
    x
}

/// Threefry bits for an array of `dims` with `width`-bit elements (8, 16, 32 or 64);
/// returns the bits in row-major order and how many counters were used.
fn threefry_bits(key: u64, base: u64, dims: &[i64], width: u32) -> (Vec<u64>, u64) {
    let n: usize = dims.iter().map(|&d| d.max(0) as usize).product();
    if width == 64 {
        let bits = (0..n as u64)
            .map(|i| {
                let (lo, hi) = threefry2x32(key, base.wrapping_add(i));
                lo as u64 | (hi as u64) << 32
            })
            .collect();
        return (bits, n as u64);
    }
    if dims.is_empty() {
        return (vec![threefry2x32(key, base).0 as u64 & mask(width)], 1);
    }
    // XLA halves the first even dimension (else the largest) and pairs neighbours on it.
    let split = dims.iter().position(|&d| d % 2 == 0).unwrap_or_else(|| {
        let mut best = 0;
        for (i, &d) in dims.iter().enumerate() {
            if d > dims[best] {
                best = i;
            }
        }
        best
    });
    let mut half = dims.to_vec();
    half[split] = (dims[split] + 1) / 2;
    let half_strides = Shape::new(ElementType::U32, half.clone()).strides();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0i64; dims.len()];
    for _ in 0..n {
        let mut counter = 0u64;
        for (d, (&i, &s)) in idx.iter().zip(&half_strides).enumerate() {
            let i = if d == split { i / 2 } else { i };
            counter += i as u64 * s as u64;
        }
        let (lo, hi) = threefry2x32(key, base.wrapping_add(counter));
        let word = if idx[split] % 2 == 0 { lo } else { hi };
        out.push(word as u64 & mask(width));
        super::index::next_index(&mut idx, dims);
    }
    let used = half.iter().map(|&d| d.max(0) as u64).product();
    (out, used)
}

/// Philox bits: `n` elements of `width` bits from the 128-bit counter `(lo, hi)`;
/// returns the bits and the advanced counter.
fn philox_bits(key: u64, lo: u64, hi: u64, n: usize, width: u32) -> (Vec<u64>, (u64, u64)) {
    let per_block = if width == 64 { 2 } else { 4 };
    let blocks = n.div_ceil(per_block) as u64;
    let add = |i: u64| {
        let l = lo.wrapping_add(i);
        (l, if l < lo { hi.wrapping_add(1) } else { hi })
    };
    let mut out = Vec::with_capacity(n);
    for b in 0..blocks {
        let (l, h) = add(b);
        let x = philox4x32([l as u32, (l >> 32) as u32, h as u32, (h >> 32) as u32], key);
        if width == 64 {
            out.push(x[0] as u64 | (x[1] as u64) << 32);
            out.push(x[2] as u64 | (x[3] as u64) << 32);
        } else {
            out.extend(x.iter().map(|&w| w as u64 & mask(width)));
        }
    }
    out.truncate(n);
    (out, add(blocks))
}

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Reinterprets raw bits as elements of `elem`.
fn bits_to_data(elem: ElementType, bits: Vec<u64>) -> Result<Data, String> {
    Ok(if elem.is_signed_int() {
        Data::S(bits.into_iter().map(|b| wrap_signed(elem, b as i64)).collect())
    } else if elem.is_unsigned_int() {
        Data::U(bits)
    } else if elem.is_float() {
        Data::F(bits.into_iter().map(|b| float_from_bits(elem, b)).collect())
    } else {
        return Err(format!("cannot generate random bits of type {elem}"));
    })
}

pub(super) fn rng_bit_generator(_: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::RngBitGenerator { algorithm } = inst.op else { return Err("not a rng_bit_generator".into()) };
    let state = array_arg(args, 0)?;
    let shapes = result_shapes(inst)?;
    let [state_shape, out_shape] = shapes.as_slice() else {
        return Err(format!("rng_bit_generator returns (state, bits), got {}", inst.ty));
    };
    let Data::U(words) = &state.data else {
        return Err(format!("the state must be u64, got {}", state.elem()));
    };
    if state.elem() != ElementType::U64 || state.shape.rank() != 1 || !state_shape.same_shape(&state.shape) {
        return Err(format!("the state must be a u64 vector returned with the same type, got {}", state.shape));
    }
    let width = out_shape.elem.bit_width();
    if out_shape.elem.is_pred() {
        return Err("cannot generate random bits of type pred".into());
    }
    let key = words.first().copied().unwrap_or(0);
    let mut new_state = words.clone();
    let bits = match algorithm {
        RngAlgorithm::Default | RngAlgorithm::ThreeFry => {
            if words.len() != 2 {
                return Err(format!("THREE_FRY needs a state of 2 words, got {}", words.len()));
            }
            let (bits, used) = threefry_bits(key, words[1], &out_shape.dims, width);
            new_state[1] = words[1].wrapping_add(used);
            bits
        }
        RngAlgorithm::Philox => {
            let (lo, hi) = match words.len() {
                2 => (words[1], words[0]),
                3 => (words[1], words[2]),
                n => return Err(format!("PHILOX needs a state of 2 or 3 words, got {n}")),
            };
            let (bits, (new_lo, new_hi)) = philox_bits(key, lo, hi, out_shape.num_elements(), width);
            new_state[1] = new_lo;
            if words.len() == 3 {
                new_state[2] = new_hi;
            }
            bits
        }
    };
    let out = Literal::new(out_shape.clone(), bits_to_data(out_shape.elem, bits)?);
    let state = Literal::new(state_shape.clone(), Data::U(new_state));
    Ok(Value::Tuple(vec![Value::Array(state), Value::Array(out)]))
}

/// FNV-1a: a stable 64-bit key from the instruction's name.
fn name_key(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

pub(super) fn rng(interp: &mut Interpreter, inst: &Instruction, args: &[Value]) -> Result<Value, String> {
    let Op::Rng { distribution } = inst.op else { return Err("not a rng".into()) };
    let a = array_arg(args, 0)?;
    let b = array_arg(args, 1)?;
    let out = result_shape(inst)?;
    let elem = out.elem;
    if a.shape.rank() != 0 || b.shape.rank() != 0 || a.elem() != elem || b.elem() != elem {
        return Err(format!("rng bounds must be scalars of the result type {elem}"));
    }
    let n = out.num_elements();
    let width = if elem.byte_size() == 8 { 64 } else { 32 };
    // Two words per element for the normal distribution (Box-Muller needs two uniforms).
    let words = if distribution == RngDistribution::Normal { 2 * n } else { n };
    let (bits, _) = threefry_bits(name_key(&inst.name), interp.loop_iterations << 32, &[words as i64], width);
    // A fraction in [0, 1) from the top mantissa bits, as XLA does for uniform floats.
    let mantissa = if width == 64 { 52 } else { 23 };
    let unit = |w: u64| (w >> (width - mantissa)) as f64 * (-(mantissa as f64)).exp2();
    let data = match (distribution, a.get(0), b.get(0)) {
        (RngDistribution::Uniform, Scalar::F(lo), Scalar::F(hi)) => {
            if lo.partial_cmp(&hi) != Some(std::cmp::Ordering::Less) {
                return Err(format!("uniform rng needs a < b, got [{lo}, {hi})"));
            }
            Data::F(
                bits.iter()
                    .map(|&w| {
                        let v = round_float(elem, lo + (hi - lo) * unit(w));
                        // Rounding may reach b; keep the interval half-open.
                        if v >= hi {
                            lo
                        } else {
                            v
                        }
                    })
                    .collect(),
            )
        }
        (RngDistribution::Normal, Scalar::F(mean), Scalar::F(sigma)) => Data::F(
            (0..n)
                .map(|i| {
                    let u1 = unit(bits[2 * i]).max(1e-7);
                    let u2 = unit(bits[2 * i + 1]);
                    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                    round_float(elem, mean + sigma * z)
                })
                .collect(),
        ),
        (RngDistribution::Uniform, Scalar::S(lo), Scalar::S(hi)) if lo < hi => {
            let range = hi.wrapping_sub(lo) as u64;
            Data::S(bits.iter().map(|&w| wrap_signed(elem, lo.wrapping_add((w % range) as i64))).collect())
        }
        (RngDistribution::Uniform, Scalar::U(lo), Scalar::U(hi)) if lo < hi => {
            Data::U(bits.iter().map(|&w| wrap_unsigned(elem, lo + w % (hi - lo))).collect())
        }
        (RngDistribution::Uniform, Scalar::Pred(lo), Scalar::Pred(hi)) if !lo & hi => Data::Pred(vec![false; n]),
        (RngDistribution::Normal, _, _) => return Err(format!("normal rng needs a float type, got {elem}")),
        _ => return Err("uniform rng needs a < b".into()),
    };
    Ok(Value::Array(Literal::new(out, data)))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use crate::ir::{ElementType, ElementType::*, Literal, Op, RngAlgorithm, RngDistribution, Type, Value};

    const M: u64 = u64::MAX;

    /// Runs rng_bit_generator; returns (new state, bits as u64).
    fn bits(alg: RngAlgorithm, state: &[u64], elem: ElementType, dims: &[i64]) -> (Vec<u64>, Vec<u64>) {
        let st = uints(U64, &[state.len() as i64], state);
        let ty = Type::Tuple(vec![arr(U64, &[state.len() as i64]), arr(elem, dims)]);
        let out = run_op(Op::RngBitGenerator { algorithm: alg }, ty, &[st.into()]).unwrap().flatten();
        let as_u64 = |l: &Literal| (0..l.num_elements()).map(|i| l.bits(i)).collect::<Vec<_>>();
        (as_u64(&out[0]), as_u64(&out[1]))
    }

    // Expected values come from JAX 0.10 on CPU:
    // jax.lax.rng_bit_generator(key, shape, dtype, algorithm=...) with x64 enabled; the
    // 3-word Philox states from the same StableHLO compiled with a tensor<3xui64> state.

    #[test]
    fn threefry_u64_matches_xla_and_the_spec_example() {
        let (s, b) = bits(RngAlgorithm::ThreeFry, &[1, 2], U64, &[2, 2]);
        assert_eq!(s, [1, 6]);
        assert_eq!(b, [9236835810183407956, 16087790271692313299, 18212823393184779219, 2658481902456610144]);
        let (s, b) = bits(RngAlgorithm::ThreeFry, &[7, M - 1], U64, &[3]);
        assert_eq!(s, [7, 1]);
        assert_eq!(b, [11623698188067921303, 6868590399942727175, 13563526760692328810]);
    }

    #[test]
    fn threefry_u32_splits_the_shape_like_xla() {
        let (s, b) = bits(RngAlgorithm::ThreeFry, &[1, 2], U32, &[5]);
        assert_eq!(s, [1, 5]);
        assert_eq!(b, [43444564, 2150618427, 3979645651, 3745730563, 1672743891]);
        let (s, b) = bits(RngAlgorithm::ThreeFry, &[1, 2], U32, &[3, 3]);
        assert_eq!(s, [1, 8]);
        assert_eq!(
            b,
            [43444564, 3979645651, 1672743891, 2150618427, 3745730563, 4240503393, 2109414752, 2534981805, 2868795927]
        );
        let (s, b) = bits(RngAlgorithm::ThreeFry, &[1, 2], U32, &[2, 3]);
        assert_eq!(s, [1, 5]);
        assert_eq!(b, [43444564, 3979645651, 1672743891, 2150618427, 3745730563, 4240503393]);
        let (s, b) = bits(RngAlgorithm::ThreeFry, &[3, 4], U32, &[2, 3]);
        assert_eq!(s, [3, 7]);
        assert_eq!(b, [555017538, 1109507171, 3802093305, 3728210106, 3604763515, 3166652467]);
        let (s, b) = bits(RngAlgorithm::ThreeFry, &[1, 2], U32, &[]);
        assert_eq!((s, b), (vec![1, 3], vec![43444564]));
    }

    #[test]
    fn threefry_u16_truncates_32_bit_words() {
        let (s, b) = bits(RngAlgorithm::ThreeFry, &[1, 2], U16, &[3]);
        assert_eq!((s, b), (vec![1, 4], vec![59732, 54587, 37587]));
    }

    #[test]
    fn philox_two_word_state() {
        let (s, b) = bits(RngAlgorithm::Philox, &[1, 2], U32, &[5]);
        assert_eq!(s, [1, 4]);
        assert_eq!(b, [2100602697, 2847456232, 2074354647, 800269529, 1828267006]);
        let (s, b) = bits(RngAlgorithm::Philox, &[1, 2], U64, &[3]);
        assert_eq!(s, [1, 4]);
        assert_eq!(b, [12229731395331991369, 3437131457114678231, 13465615291114923006]);
        let (s, b) = bits(RngAlgorithm::Philox, &[5, M], U32, &[6]);
        assert_eq!(s, [5, 1]);
        assert_eq!(b, [1314562490, 4035658752, 2543735481, 4162936588, 64677483, 3635105107]);
        let (s, b) = bits(RngAlgorithm::Philox, &[1, 2], U8, &[3]);
        assert_eq!((s, b), (vec![1, 3], vec![73, 232, 215]));
    }

    #[test]
    fn philox_three_word_state_carries_into_the_high_word() {
        let (s, b) = bits(RngAlgorithm::Philox, &[1, 2, 3], U32, &[5]);
        assert_eq!(s, [1, 4, 3]);
        assert_eq!(b, [4031113034, 1366700262, 495645701, 3051723414, 89414891]);
        let (s, b) = bits(RngAlgorithm::Philox, &[5, M, 9], U32, &[5]);
        assert_eq!(s, [5, 1, 10]);
        assert_eq!(b, [4017057404, 1634864995, 201065378, 3840247100, 1292614439]);
    }

    #[test]
    fn float_and_signed_outputs_reinterpret_the_bits() {
        let (_, u) = bits(RngAlgorithm::ThreeFry, &[1, 2], U32, &[5]);
        let (_, f) = bits(RngAlgorithm::ThreeFry, &[1, 2], F32, &[5]);
        let (_, s) = bits(RngAlgorithm::ThreeFry, &[1, 2], S32, &[5]);
        assert_eq!(u, f);
        assert_eq!(u, s);
    }

    #[test]
    fn bad_states_are_errors() {
        let ty = Type::Tuple(vec![arr(U64, &[3]), arr(U32, &[2])]);
        let st = uints(U64, &[3], &[1, 2, 3]);
        let err = run_op(Op::RngBitGenerator { algorithm: RngAlgorithm::ThreeFry }, ty, &[st.into()]).unwrap_err();
        assert!(err.message.contains("2 words"), "{err}");
    }

    fn rng(dist: RngDistribution, a: Literal, b: Literal, dims: &[i64]) -> Literal {
        let ty = arr(a.elem(), dims);
        run_op_array(Op::Rng { distribution: dist }, ty, &[Value::Array(a), Value::Array(b)])
    }

    #[test]
    fn rng_uniform_stays_in_range_and_is_reproducible() {
        let x = rng(RngDistribution::Uniform, f32s(&[], &[-1.0]), f32s(&[], &[3.0]), &[1000]);
        assert!(x.to_f64_vec().iter().all(|&v| (-1.0..3.0).contains(&v)));
        let mean = x.to_f64_vec().iter().sum::<f64>() / 1000.0;
        assert!((mean - 1.0).abs() < 0.15, "mean {mean}");
        assert_eq!(x, rng(RngDistribution::Uniform, f32s(&[], &[-1.0]), f32s(&[], &[3.0]), &[1000]));
        let k = rng(RngDistribution::Uniform, ints(S32, &[], &[-2]), ints(S32, &[], &[2]), &[200]);
        let ks: Vec<f64> = k.to_f64_vec();
        assert!(ks.iter().all(|&v| (-2.0..2.0).contains(&v)));
        for want in [-2.0, -1.0, 0.0, 1.0] {
            assert!(ks.contains(&want), "{want} never drawn");
        }
    }

    #[test]
    fn rng_normal_has_the_requested_moments() {
        let x = rng(RngDistribution::Normal, lit(F64, &[], &[5.0]), lit(F64, &[], &[2.0]), &[4000]).to_f64_vec();
        let mean = x.iter().sum::<f64>() / x.len() as f64;
        let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / x.len() as f64;
        assert!((mean - 5.0).abs() < 0.15 && (var.sqrt() - 2.0).abs() < 0.15, "mean {mean}, sd {}", var.sqrt());
    }

    #[test]
    fn rng_rejects_empty_ranges_and_integer_normals() {
        let err = run_op(
            Op::Rng { distribution: RngDistribution::Uniform },
            arr(F32, &[2]),
            &[f32s(&[], &[1.0]).into(), f32s(&[], &[1.0]).into()],
        );
        assert!(err.is_err());
        let err = run_op(
            Op::Rng { distribution: RngDistribution::Normal },
            arr(S32, &[2]),
            &[ints(S32, &[], &[0]).into(), ints(S32, &[], &[1]).into()],
        );
        assert!(err.unwrap_err().message.contains("float"));
    }
}
