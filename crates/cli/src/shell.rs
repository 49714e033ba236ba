//! Shell integration: completion scripts and the man page, generated from
//! the same clap definition the parser uses, so they never drift from it.

use std::io::Write;
use std::process::ExitCode;

/// Writes `bytes` to stdout; a reader that went away early is not an error
/// (`coffer man | head`), as for `cat`.
fn emit(bytes: &[u8]) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("coffer: <stdout>: write: {e}");
            ExitCode::from(crate::report::Status::Failed.exit_code())
        }
    }
}

/// `coffer completions SHELL`.
pub fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut crate::examples::command(), "coffer", &mut out);
    emit(&out)
}

/// `coffer man`: the roff page for `coffer`, its options and a section
/// listing its subcommands.
pub fn man() -> ExitCode {
    let mut out = Vec::new();
    clap_mangen::Man::new(crate::examples::command())
        .render(&mut out)
        .expect("rendering into memory cannot fail");
    emit(&out)
}
