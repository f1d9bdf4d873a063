//! The `hloscope` command-line tool.

fn main() {
    println!("hloscope {}", env!("CARGO_PKG_VERSION"));
}
