//! Clean interrupts of the long commands: SIGINT or SIGTERM asks the work
//! to stop at its next safe point (`coffer_base::interrupt`), where it
//! removes its temp files and returns `io.interrupted`; the command then
//! clears its progress bar, says what was stored, and exits 130. A second
//! signal ends the process at once, as the default action would.

use signal_hook::consts::{SIGINT, SIGTERM};

/// The exit status of an interrupted command (128 + SIGINT, as shells
/// report it), for SIGTERM too.
pub const EXIT: u8 = 130;

/// Whether `command` is long work that honours a stop at safe points.
/// The others keep the default action: they end at once, and never leave
/// anything half-written either.
pub fn honoured_by(command: &str) -> bool {
    matches!(
        command,
        "put"
            | "get"
            | "gc"
            | "mirror"
            | "bundle ingest"
            | "bundle checkout"
            | "packet freeze"
            | "packet materialize"
            | "export create"
            | "export pack"
            | "export unpack"
            | "bundle view"
            | "export view"
    )
}

/// Routes SIGINT and SIGTERM to the stop flag; a second one exits.
pub fn watch() {
    let flag = coffer_base::interrupt::flag();
    for sig in [SIGINT, SIGTERM] {
        // The order matters: the shutdown is registered first, so the first
        // signal finds the flag down (and only raises it), the second up.
        let registered =
            signal_hook::flag::register_conditional_shutdown(sig, i32::from(EXIT), flag.clone())
                .and_then(|_| signal_hook::flag::register(sig, flag.clone()));
        // Without handlers the default action stays: the command is
        // killed, as before, and nothing half-written becomes visible.
        let _ = registered;
    }
}

/// What an interrupted `command` tells its user it left behind.
pub fn outcome(command: &str) -> &'static str {
    match command {
        "gc" => "interrupted: the objects removed before the stop are gone from the catalog and the disk alike; nothing else was removed",
        "mirror" => "interrupted: the objects copied before the stop are in place at the destination; run mirror again to finish",
        "get" | "bundle checkout" | "packet materialize" | "export create" | "export pack"
        | "export unpack" | "bundle view" | "export view" => "interrupted: nothing was written",
        _ => "interrupted: nothing was stored",
    }
}
