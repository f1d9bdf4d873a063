//! The CPU target against HLO's element semantics ([`hloscope_core::kernel::semantics`]):
//! every case compiled (never interpreted), as given (short arrays: scalar code) and with
//! its inputs repeated (vector code with scalar tails), must give the hand-checked result.
//! Needs the `cpu` feature.

#![cfg(feature = "cpu")]

use hloscope_core::ir::Value;
use hloscope_core::kernel::semantics::{cases, same_result};
use hloscope_core::kernel::KernelKind;
use hloscope_core::targets::cpu;

#[test]
fn the_cpu_target_meets_every_semantic_case() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for c in cases().iter().flat_map(|c| [c.clone(), c.repeated(9)]) {
        let module = hloscope_core::parse::parse_module(&c.hlo).unwrap();
        let exe = cpu::compile(&module).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let kinds: Vec<&KernelKind> = exe.plan().kernels.iter().map(|k| &k.kind).collect();
        if kinds != [&KernelKind::Loop] {
            failures.push(format!("{}: not one compiled loop kernel: {kinds:?}", c.name));
            continue;
        }
        let args: Vec<Value> = c.inputs.iter().cloned().map(Value::Array).collect();
        match exe.run(&args).unwrap_or_else(|e| panic!("{}: {e}", c.name)) {
            Value::Array(got) if same_result(&got, &c.want) => checked += 1,
            other => failures.push(format!(
                "{} ({} elements): got {other:?}, want {:?}",
                c.name,
                c.want.shape.num_elements(),
                c.want
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(checked, cases().len() * 2);
}
