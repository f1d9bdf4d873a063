//! Entry arguments from `.npy` files, one per parameter of the entry computation, for
//! `hloscope run`, `POST /api/run` and the browser's worker.
//!
//! Every check here names the parameter it concerns, with the dtype and shape it expects
//! and the file's, because a wrong input is the most common mistake a person makes.

use super::{dims_text, numpy_name, read_ref, NpyRef};
use crate::ir::{ElementType, Module, Shape, Type, Value};

/// How a parameter is named in messages: `parameter 0 (%x: f32[2,3])`.
pub fn describe_param(module: &Module, index: usize) -> String {
    let entry = module.entry_comp();
    let inst = entry.inst(entry.params[index]);
    format!("parameter {index} (%{}: {})", inst.name, inst.ty)
}

/// What an `.npy` file for parameter `index` must hold, as NumPy says it:
/// `float32 (4, 16)`; None for a tuple or token parameter, which no file can hold.
pub fn expected_npy(module: &Module, index: usize) -> Option<String> {
    let entry = module.entry_comp();
    let shape = entry.inst(entry.params[index]).ty.as_array()?;
    let dtype = match shape.elem {
        ElementType::BF16 => "float32 (rounded to bfloat16)",
        e => numpy_name(e),
    };
    Some(format!("{dtype} {}", dims_text(&shape.dims)))
}

/// Turns the `.npy` files' contents into entry arguments, checking count, shape and dtype.
/// `files` holds (display name, bytes) per file, in parameter order.
pub fn from_npy(module: &Module, files: &[(String, Vec<u8>)]) -> Result<Vec<Value>, String> {
    let count = module.entry_comp().params.len();
    if files.len() != count {
        let list = (0..count).map(|i| format!("\n  {}", describe_param(module, i))).collect::<String>();
        return Err(format!(
            "the module takes {} parameter{}, but {} --input file{} given{}",
            count,
            plural(count),
            files.len(),
            if files.len() == 1 { " was" } else { "s were" },
            if list.is_empty() { String::new() } else { format!(":{list}") },
        ));
    }
    files.iter().enumerate().map(|(i, (name, bytes))| param_from_npy(module, i, name, bytes)).collect()
}

/// Parameter `index`'s argument from the file `name` holding `bytes`.
pub fn param_from_npy(module: &Module, index: usize, name: &str, bytes: &[u8]) -> Result<Value, String> {
    let (arr, shape) = checked(module, index, name, bytes)?;
    let lit = arr.to_literal(shape.elem).ok_or_else(|| format!("{name}: could not decode the data"))?;
    Ok(Value::Array(lit))
}

/// Whether the file `name` holding `bytes` fits parameter `index`, without decoding its
/// data (the same checks and messages as [`param_from_npy`]).
pub fn check_param(module: &Module, index: usize, name: &str, bytes: &[u8]) -> Result<(), String> {
    checked(module, index, name, bytes).map(|_| ())
}

fn checked<'a>(
    module: &'a Module,
    index: usize,
    name: &str,
    bytes: &'a [u8],
) -> Result<(NpyRef<'a>, &'a Shape), String> {
    let entry = module.entry_comp();
    let shape = match &entry.inst(entry.params[index]).ty {
        Type::Array(s) => s,
        _ => {
            return Err(format!(
                "{}: {} has a tuple or token type, which an .npy file cannot hold",
                name,
                describe_param(module, index)
            ))
        }
    };
    let arr = read_ref(bytes).map_err(|e| format!("{name}: {e}"))?;
    check_matches(&arr, shape).map_err(|why| format!("{name}: {} {why}", describe_param(module, index)))?;
    Ok((arr, shape))
}

/// Checks an array's dtype and dimensions against a parameter's shape.
fn check_matches(arr: &NpyRef, shape: &Shape) -> Result<(), String> {
    let dtype_ok = arr.elem == shape.elem || (shape.elem == ElementType::BF16 && arr.elem == ElementType::F32);
    let expected = match shape.elem {
        ElementType::BF16 => "float32 (`<f4`, rounded to bfloat16)".to_string(),
        e => format!("{} (`{}`)", numpy_name(e), e.numpy_descr().unwrap_or("?")),
    };
    if !dtype_ok {
        return Err(format!("expects dtype {expected}, but the file holds {}", numpy_name(arr.elem)));
    }
    if arr.dims[..] != shape.dims[..] {
        return Err(format!(
            "expects shape {}, but the file holds shape {}",
            dims_text(&shape.dims),
            dims_text(&arr.dims)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Literal;
    use crate::npy::{write, NpyArray};

    /// Two parameters: `%x: f32[2,3]` and a bf16 `%b: bf16[3]`.
    fn module() -> Module {
        let text = "HloModule m\n\nENTRY main {\n  x = f32[2,3] parameter(0)\n  b = bf16[3] parameter(1)\n  \
                    c = f32[3] convert(b)\n  d = f32[2,3] broadcast(c), dimensions={1}\n  ROOT y = f32[2,3] add(x, d)\n}\n";
        crate::parse::parse_module(text).unwrap()
    }

    fn file(elem: ElementType, dims: &[i64], values: &[f64]) -> Vec<u8> {
        write(&NpyArray::from_literal(&Literal::from_f64s(Shape::new(elem, dims), values)))
    }

    #[test]
    fn matching_files_become_the_arguments() {
        let m = module();
        let x = file(ElementType::F32, &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let b = file(ElementType::F32, &[3], &[0.5, 1.0 / 3.0, -2.0]);
        let args = from_npy(&m, &[("x.npy".into(), x), ("b.npy".into(), b.clone())]).unwrap();
        let lit = |v: &Value| v.as_array().unwrap().clone();
        assert_eq!(lit(&args[0]).to_f64_vec(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        // The bf16 parameter takes float32 data, rounded to nearest even.
        assert_eq!(lit(&args[1]).elem(), ElementType::BF16);
        assert_eq!(lit(&args[1]).to_f64_vec(), vec![0.5, 0.333984375, -2.0]);
        assert_eq!(check_param(&m, 1, "b.npy", &b), Ok(()));
        assert_eq!(expected_npy(&m, 0).as_deref(), Some("float32 (2, 3)"));
        assert_eq!(expected_npy(&m, 1).as_deref(), Some("float32 (rounded to bfloat16) (3,)"));
    }

    #[test]
    fn a_mismatch_names_the_parameter_what_it_expects_and_what_the_file_holds() {
        let m = module();
        let wrong_shape = file(ElementType::F32, &[3, 2], &[0.0; 6]);
        let e = check_param(&m, 0, "x.npy", &wrong_shape).unwrap_err();
        assert_eq!(e, "x.npy: parameter 0 (%x: f32[2,3]) expects shape (2, 3), but the file holds shape (3, 2)");
        let wrong_dtype = file(ElementType::F64, &[2, 3], &[0.0; 6]);
        let e = param_from_npy(&m, 0, "x.npy", &wrong_dtype).unwrap_err();
        assert_eq!(e, "x.npy: parameter 0 (%x: f32[2,3]) expects dtype float32 (`<f4`), but the file holds float64");
        let e = check_param(&m, 1, "b.npy", &file(ElementType::F16, &[3], &[0.0; 3])).unwrap_err();
        assert_eq!(
            e,
            "b.npy: parameter 1 (%b: bf16[3]) expects dtype float32 (`<f4`, rounded to bfloat16), but the file holds float16"
        );
        // Not an .npy file at all: the file is named, and why.
        let e = check_param(&m, 1, "b.npy", b"hello world").unwrap_err();
        assert!(e.starts_with("b.npy: not an .npy file"), "{e}");
    }

    #[test]
    fn the_wrong_number_of_files_lists_the_parameters() {
        let m = module();
        let x = file(ElementType::F32, &[2, 3], &[0.0; 6]);
        let e = from_npy(&m, &[("x.npy".into(), x)]).unwrap_err();
        assert_eq!(
            e,
            "the module takes 2 parameters, but 1 --input file was given:\n  parameter 0 (%x: f32[2,3])\n  parameter 1 (%b: bf16[3])"
        );
    }
}
