//! The envelope of a compiled artifact (the CPU target's and the WebAssembly target's):
//! an 8-byte magic naming the target, the format version (u32), the payload's length
//! (u64) and its xxh3 checksum (u64), then the payload, little endian. Opening checks all
//! four and says which failed; the payload's own decoding comes after.

/// This compiler's identity: an artifact from any other is stale.
pub fn compiler_version() -> String {
    // The sources' fingerprint (`build.rs`): any change to the passes, the planner, the
    // emitters or the approximations makes older artifacts stale.
    format!("hloscope-core {} source {}", env!("CARGO_PKG_VERSION"), env!("HLOSCOPE_SOURCE_HASH"))
}

/// Writes `bytes` to `path` through a temporary file beside it renamed into place, so
/// that no reader ever sees half of it (its folder is made first). The compilation
/// cache's entries and the WebAssembly target's compiled GEMM library are stored so.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().ok_or_else(|| std::io::Error::other("a file path without a folder"))?;
    std::fs::create_dir_all(dir)?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
    let tmp = dir.join(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Bytes before the payload.
const HEADER: usize = 28;

/// `payload` in its envelope.
pub fn seal(magic: &[u8; 8], version: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + HEADER);
    out.extend_from_slice(magic);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of `bytes` sealed with `magic` and `version`; `what` names the artifact
/// kind in the error ("cpu artifact").
pub fn open<'a>(magic: &[u8; 8], version: u32, what: &str, bytes: &'a [u8]) -> Result<&'a [u8], String> {
    if bytes.len() < HEADER || &bytes[..8] != magic {
        return Err(format!("not an hloscope {what} (bad magic or too short)"));
    }
    let found = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if found != version {
        return Err(format!("artifact format {found}, this compiler reads format {version}"));
    }
    let len = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
    let sum = u64::from_le_bytes(bytes[20..28].try_into().expect("8 bytes"));
    let payload = &bytes[HEADER..];
    if payload.len() as u64 != len {
        return Err(format!("truncated or padded: the payload is {} bytes, the header says {len}", payload.len()));
    }
    if xxhash_rust::xxh3::xxh3_64(payload) != sum {
        return Err("checksum mismatch (the artifact is corrupt)".into());
    }
    Ok(payload)
}

/// A value in an artifact's binary form (postcard over its serde derive).
pub fn encode<T: serde::Serialize>(v: &T) -> Result<Vec<u8>, String> {
    postcard::to_allocvec(v).map_err(|e| format!("cannot encode the artifact: {e}"))
}

/// Decodes an artifact section (`what` names it in the error); the whole section must be
/// consumed.
pub fn decode<'a, T: serde::Deserialize<'a>>(what: &str, bytes: &'a [u8]) -> Result<T, String> {
    match postcard::take_from_bytes(bytes) {
        Ok((v, [])) => Ok(v),
        Ok((_, rest)) => Err(format!("the artifact's {what} section has {} trailing bytes", rest.len())),
        Err(e) => Err(format!("the artifact's {what} section does not decode: {e}")),
    }
}
