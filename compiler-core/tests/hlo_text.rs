//! XLA HLO text: parsing hand-written and real XLA dumps, printing, round trips.

use hloscope_core::parse::hlo;

fn samples() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hlo_samples");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hlo"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    out.sort();
    out
}

#[test]
fn real_xla_dumps_parse() {
    for (name, text) in samples() {
        let m = hlo::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        eprintln!("{name}: {} comps, {} insts", m.comps.len(), m.instruction_count());
    }
}
