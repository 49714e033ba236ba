//! Progress bars on stderr, shown only to a person at a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::Ctx;

/// A byte-counting bar (`total` known) or spinner; hidden unless stderr is a
/// terminal and neither `--json` nor `--quiet` was given.
pub fn bytes(ctx: &Ctx, total: Option<u64>, what: &str) -> ProgressBar {
    if !watched(ctx) {
        return ProgressBar::hidden();
    }
    let pb = match total {
        Some(t) => ProgressBar::with_draw_target(Some(t), ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template(
                "{msg} {wide_bar} {bytes}/{total_bytes} {binary_bytes_per_sec} {eta}",
            )
            .expect("static template"),
        ),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template("{spinner} {msg} {bytes} {binary_bytes_per_sec}")
                .expect("static template"),
        ),
    };
    pb.set_message(what.to_string());
    pb
}

/// What a reported bar counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes (most long work).
    Bytes,
    /// Objects (gc).
    Objects,
}

/// Whether a person is watching: stderr is a terminal, and neither
/// `--json` nor `--quiet` was given.
pub fn watched(ctx: &Ctx) -> bool {
    !ctx.json && !ctx.quiet && std::io::stderr().is_terminal()
}

/// A bar a library reports to through [`coffer_store::Progress`]: a
/// spinner until the library knows the total, then a bar with ETA.
struct Reported(ProgressBar, Unit);

impl coffer_store::Progress for Reported {
    fn total(&self, n: u64) {
        self.0.set_length(n);
        let template = match self.1 {
            Unit::Bytes => "{msg} {wide_bar} {bytes}/{total_bytes} {binary_bytes_per_sec} {eta}",
            Unit::Objects => "{msg} {wide_bar} {human_pos}/{human_len} objects {per_sec} {eta}",
        };
        self.0
            .set_style(ProgressStyle::with_template(template).expect("static template"));
    }

    fn advance(&self, bytes: u64) {
        // Never past the total: a bar that ends at 101% is a bug report.
        let room = self
            .0
            .length()
            .map_or(bytes, |len| len.saturating_sub(self.0.position()));
        self.0.inc(bytes.min(room));
    }
}

/// Runs `work` on `store`, showing the progress it reports under `what`;
/// nothing is drawn unless a person is watching (see [`bytes`]), and the
/// bar is cleared before the result is printed.
pub fn shown<T>(
    ctx: &Ctx,
    store: &mut coffer_store::Store,
    what: &str,
    work: impl FnOnce(&mut coffer_store::Store) -> T,
) -> T {
    shown_in(ctx, store, what, Unit::Bytes, work)
}

/// [`shown`], counting `unit`.
pub fn shown_in<T>(
    ctx: &Ctx,
    store: &mut coffer_store::Store,
    what: &str,
    unit: Unit,
    work: impl FnOnce(&mut coffer_store::Store) -> T,
) -> T {
    let pb = match unit {
        Unit::Bytes => bytes(ctx, None, what),
        Unit::Objects if watched(ctx) => {
            let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
                ProgressStyle::with_template("{spinner} {msg}").expect("static template"),
            );
            pb.set_message(what.to_string());
            pb
        }
        Unit::Objects => ProgressBar::hidden(),
    };
    if !pb.is_hidden() {
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        store.set_progress(std::sync::Arc::new(Reported(pb.clone(), unit)));
    }
    let out = work(store);
    pb.finish_and_clear();
    out
}
