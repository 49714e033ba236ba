//! `packet validate|freeze|status|materialize`.

use coffer_base::codes;
use std::path::Path;

use coffer_evidence::packet::{self, PacketReport, PacketState};
use serde_json::json;

use super::{open_store, open_store_for_reading};
use crate::report::or_report;
use crate::report::{Issue, Report, Status};
use crate::Ctx;

fn render(r: &PacketReport, what: &str) -> Report {
    let result = serde_json::to_value(r).expect("serializable");
    let human = match r.state {
        PacketState::Changed => format!(
            "{}: changed since frozen ({})",
            r.locator,
            r.changed.join(", ")
        ),
        ref s => format!(
            "{}: {} ({what})",
            r.locator,
            format!("{s:?}").to_lowercase()
        ),
    };
    if r.state == PacketState::Invalid {
        let mut issues = r.issues.clone();
        if issues.is_empty() {
            issues.push(Issue::about(
                codes::validation::PACKET_INVALID,
                Some(r.locator.clone()),
                "packet is invalid",
            ));
        }
        return Report::from_issues(issues, result, human);
    }
    Report::accepted(result, human)
}

pub fn validate(ctx: &Ctx, root: &Path, packet: &Path) -> Report {
    // Reads nothing from the store, but like every packet command it runs
    // against one: outside a store it fails as they do.
    or_report!(open_store_for_reading(ctx));
    match packet::freeze::status(root, packet) {
        Ok(r) => render(&r, "valid"),
        Err(e) => Report::error(&e),
    }
}

pub fn status(ctx: &Ctx, root: &Path, packet: &Path) -> Report {
    // Reads nothing from the store, but like every packet command it runs
    // against one: outside a store it fails as they do.
    or_report!(open_store_for_reading(ctx));
    match packet::freeze::status(root, packet) {
        Ok(r) if r.state == PacketState::Changed => {
            let issues = r
                .changed
                .iter()
                .map(|c| {
                    Issue::about(
                        codes::conflict::PACKET_CHANGED,
                        Some(c.clone()),
                        format!("component {c} differs from the freeze record"),
                    )
                })
                .collect();
            let human = format!(
                "{}: changed since frozen ({})",
                r.locator,
                r.changed.join(", ")
            );
            Report::new(
                Status::Accepted,
                issues,
                serde_json::to_value(&r).expect("serializable"),
                human,
            )
        }
        Ok(r) => render(&r, "status"),
        Err(e) => Report::error(&e),
    }
}

pub fn freeze(ctx: &Ctx, root: &Path, packet: &Path) -> Report {
    let mut store = or_report!(open_store(ctx));
    let done = crate::progress::shown(ctx, &mut store, "freeze", |s| {
        packet::freeze::freeze(s, root, packet)
    });
    match done {
        Ok(r) => render(
            &r,
            if r.created {
                "frozen now"
            } else {
                "already frozen; record unchanged"
            },
        ),
        Err(e) => Report::error(&e),
    }
}

pub fn materialize(ctx: &Ctx, root: &Path, packet: &Path, dest: &Path) -> Report {
    let mut store = or_report!(open_store_for_reading(ctx));
    let done = crate::progress::shown(ctx, &mut store, "materialize", |s| {
        packet::freeze::materialize(s, root, packet, dest)
    });
    match done {
        Ok(n) => Report::accepted(
            json!({"dest": dest.display().to_string(), "files": n}),
            format!("materialized {n} files into {}", dest.display()),
        ),
        Err(e) => Report::error(&e),
    }
}

/// `packet ls`: every frozen packet, with the runs made on its fixture.
pub fn ls(ctx: &Ctx) -> Report {
    let store = or_report!(open_store_for_reading(ctx));
    let packets = or_report!(packet::listing::frozen(&store));
    let rows: Vec<Vec<String>> = packets
        .iter()
        .map(|p| {
            vec![
                p.packet_id.to_string(),
                p.packet_locator.clone(),
                p.frozen_at.clone(),
                p.fixture_digest.to_string(),
                p.runs.len().to_string(),
            ]
        })
        .collect();
    let human = crate::table::aligned(&["packet", "locator", "frozen", "fixture", "runs"], &rows);
    Report::accepted(json!({ "packets": packets }), human)
}
