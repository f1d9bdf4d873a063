//! The `hloscope` command-line tool.
//!
//! `main` only installs the panic hook, parses the command line and maps errors to the
//! exit status; each subcommand lives in its own module (`run.rs`, `compile.rs`,
//! `explain.rs`, `bench.rs`, `serve/`).

mod bench;
mod cache;
mod compile;
mod dump;
mod explain;
mod probe;
mod run;
mod serve;
mod summary;
mod v8;

use clap::{Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

/// Exit status of every failure: bad text, bad inputs, a failed run (clap uses it too
/// for bad command lines).
const EXIT_ERROR: u8 = 2;

/// Stack for the worker thread: the interpreter recurses into sub-computations, and
/// deeply nested programs should not overflow the default 8 MiB main stack.
pub(crate) const STACK_BYTES: usize = 256 << 20;

#[derive(Parser, Debug)]
#[command(name = "hloscope", version, about = "An explorer for XLA-style compilation of StableHLO and HLO programs.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a StableHLO or HLO module on inputs and print or save its results.
    Run(run::RunArgs),
    /// Run the pass pipeline on a module and print the result; dump every stage.
    Compile(compile::CompileArgs),
    /// Show the fusion decisions and the cost of the compiled module.
    Explain(explain::ExplainArgs),
    /// Time compiling and running a module on a target, kernel by kernel.
    Bench(bench::BenchArgs),
    /// Serve the web app and the JSON API (compile, run, share) over HTTP.
    Serve(serve::ServeArgs),
    /// One job of the server, read from standard input (started by `serve`, not by hand).
    #[command(hide = true)]
    Worker(serve::work::WorkerArgs),
}

/// Extra memory glibc's malloc takes each time a heap grows (its default is 128 KiB).
const MALLOC_TOP_PAD: i32 = 16 << 20;

/// Every command runs on a spawned thread, whose glibc heap grows 128 KiB at a time (an
/// `mprotect` and fresh page faults each) and shrinks again as soon as that much sits
/// free at its top. A compile allocates and frees in bursts, so it paid for that round
/// trip again and again, more the bigger the module: a 12-layer model made about 800
/// such calls, against 17 with a 16 MiB pad (padding never touched is never resident).
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a malloc parameter; called before any other thread runs.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, MALLOC_TOP_PAD);
    }
}

fn main() -> ExitCode {
    tune_malloc();
    // A panic is a bug in hloscope, but the person still gets a line saying so and the
    // documented exit status rather than a bare backtrace.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("error: internal error in hloscope (a bug, please report it): {msg}{at}");
        std::process::exit(EXIT_ERROR as i32);
    }));

    let cli = Cli::parse();
    if let Command::Worker(args) = &cli.command {
        return serve::work::worker_main(args);
    }
    // The WebAssembly target's GEMM library, which `run` and `bench` instantiate under
    // wasmtime: compiled once and kept beside the compiled modules (not by a run that
    // keeps nothing on disk).
    let keeps_files = match &cli.command {
        Command::Run(args) => !args.no_cache,
        Command::Bench(_) => true,
        _ => false,
    };
    if let Some(folder) = cache::folder_from_env().filter(|_| keeps_files) {
        hloscope_core::targets::wasm::runtime::keep_gemm_library_in(folder);
    }
    let worker = std::thread::Builder::new().stack_size(STACK_BYTES).spawn(move || match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Compile(args) => compile::compile(&args),
        Command::Explain(args) => explain::explain(&args),
        Command::Bench(args) => bench::bench(&args),
        Command::Serve(args) => serve::serve(&args),
        Command::Worker(_) => unreachable!("handled above"),
    });
    let result = match worker.map(|h| h.join()) {
        Ok(Ok(r)) => r,
        // The hook has already exited the process on a panic; these are the remains.
        _ => Err(run::RunError("internal error: the worker thread failed".into())),
    };
    match result {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`hloscope run ... | head`) is not an error worth reporting.
            let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}
