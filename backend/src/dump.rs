//! `--dump-dir`: one set of files per pipeline stage, numbered in order like XLA's
//! `--xla_dump_to`, so that `ls` shows the compilation as it happened and `diff` shows
//! what each pass did.

use crate::run::RunError;
use hloscope_core::api::{self, Snapshot};
use std::path::Path;

/// Writes `NN-STAGE.hlo`, `.json` and `.dot` for every snapshot into `dir`.
pub fn write_stages(dir: &Path, snapshots: &[Snapshot]) -> Result<(), RunError> {
    std::fs::create_dir_all(dir).map_err(|e| RunError(format!("cannot create {}: {e}", dir.display())))?;
    for s in snapshots {
        let stem = format!("{:02}-{}", s.index, s.pass);
        let files =
            [("hlo", s.text.clone()), ("json", api::to_json(s) + "\n"), ("dot", api::graph_to_dot(&s.graph, &stem))];
        for (ext, contents) in files {
            let path = dir.join(format!("{stem}.{ext}"));
            std::fs::write(&path, contents).map_err(|e| RunError(format!("cannot write {}: {e}", path.display())))?;
        }
    }
    Ok(())
}
