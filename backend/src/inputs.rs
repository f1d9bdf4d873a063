//! Entry arguments for `hloscope run`: read from `.npy` files, or made up
//! deterministically from a seed (`hloscope_core::interp::random_inputs`).
//!
//! Every check here names the parameter it concerns, because a wrong input is the most
//! common mistake a person makes on the command line.

use crate::npy::{self, NpyArray};
use hloscope_core::ir::{ElementType, Module, Shape, Type, Value};

/// How a parameter is named in messages: `parameter 0 (%x: f32[2,3])`.
pub fn describe_param(module: &Module, index: usize) -> String {
    let entry = module.entry_comp();
    let inst = entry.inst(entry.params[index]);
    format!("parameter {index} (%{}: {})", inst.name, inst.ty)
}

/// Turns the `.npy` files' contents into entry arguments, checking count, shape and dtype.
/// `files` holds (display name, bytes) per `--input`, in parameter order.
pub fn from_npy(module: &Module, files: &[(String, Vec<u8>)]) -> Result<Vec<Value>, String> {
    let entry = module.entry_comp();
    let types = entry.param_types();
    if files.len() != types.len() {
        let list = (0..types.len()).map(|i| format!("\n  {}", describe_param(module, i))).collect::<String>();
        return Err(format!(
            "the module takes {} parameter{}, but {} --input file{} given{}",
            types.len(),
            plural(types.len()),
            files.len(),
            if files.len() == 1 { " was" } else { "s were" },
            if list.is_empty() { String::new() } else { format!(":{list}") },
        ));
    }
    files
        .iter()
        .zip(&types)
        .enumerate()
        .map(|(i, ((name, bytes), ty))| {
            let shape = match ty {
                Type::Array(s) => s,
                _ => {
                    return Err(format!(
                        "{}: {} has a tuple or token type, which an .npy file cannot hold",
                        name,
                        describe_param(module, i)
                    ))
                }
            };
            let arr = npy::read(bytes).map_err(|e| format!("{name}: {e}"))?;
            check_matches(&arr, shape).map_err(|why| format!("{name}: {} {why}", describe_param(module, i)))?;
            let lit = arr.to_literal(shape.elem).ok_or_else(|| format!("{name}: could not decode the data"))?;
            Ok(Value::Array(lit))
        })
        .collect()
}

/// Checks an array's dtype and dimensions against a parameter's shape.
fn check_matches(arr: &NpyArray, shape: &Shape) -> Result<(), String> {
    let dtype_ok = arr.elem == shape.elem || (shape.elem == ElementType::BF16 && arr.elem == ElementType::F32);
    let expected = match shape.elem {
        ElementType::BF16 => "float32 (`<f4`, rounded to bfloat16)".to_string(),
        e => format!("{} (`{}`)", npy::numpy_name(e), e.numpy_descr().unwrap_or("?")),
    };
    if !dtype_ok {
        return Err(format!("expects dtype {expected}, but the file holds {}", npy::numpy_name(arr.elem)));
    }
    if arr.dims != shape.dims {
        return Err(format!(
            "expects shape {}, but the file holds shape {}",
            npy::dims_text(&shape.dims),
            npy::dims_text(&arr.dims)
        ));
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
