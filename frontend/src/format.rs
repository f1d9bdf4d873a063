//! Numbers as the panes print them, one way everywhere (the worker sizes a cluster's box
//! from the label the page then draws, so both must print alike: the worker includes this
//! file).

/// `512 B`, `1.5 KB`, `2.25 MB`.
pub fn bytes(b: u64) -> String {
    match b {
        0..1024 => format!("{b} B"),
        1024..1_048_576 => format!("{:.1} KB", b as f64 / 1024.0),
        _ => format!("{:.2} MB", b as f64 / 1_048_576.0),
    }
}

/// `3.20 µs`, `1.250 ms`, `2.000 s`.
pub fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.2} µs", s * 1e6)
    }
}
