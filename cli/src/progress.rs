//! Progress bars on stderr, shown only to a person at a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::Ctx;

/// A byte-counting bar (`total` known) or spinner; hidden unless stderr is a
/// terminal and neither `--json` nor `--quiet` was given.
pub fn bytes(ctx: &Ctx, total: Option<u64>, what: &str) -> ProgressBar {
    if ctx.json || ctx.quiet || !std::io::stderr().is_terminal() {
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
