//! `packet ls`: the frozen packets of a store, each with the runs made on
//! its fixture.

use coffer_base::digest::Digest;
use coffer_store::Store;
use serde::Serialize;

use crate::bundle::facts;
use crate::error::Result;

/// One freeze record in the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FrozenPacket {
    /// The packet's id.
    pub packet_id: crate::ids::PacketId,
    /// Where the packet file was, relative to its root.
    pub packet_locator: String,
    /// The freeze record's digest.
    pub record_digest: Digest,
    /// The packet's aggregate digest.
    pub aggregate_digest: Digest,
    /// The frozen fixture archive's digest.
    pub fixture_digest: Digest,
    /// When it was frozen (the record's `frozenAt`).
    pub frozen_at: String,
    /// Stored runs whose manifest names this fixture digest.
    pub runs: Vec<String>,
}

/// Every freeze record, by packet id and time frozen.
pub fn frozen(store: &Store) -> Result<Vec<FrozenPacket>> {
    let rows: Vec<FrozenPacket> = store.catalog().reader().query(
        "SELECT packet_id, packet_locator, record_digest, aggregate_digest, fixture_digest, frozen_at \
         FROM freezes ORDER BY packet_id, frozen_at, record_digest",
        &[],
        |r| {
            Ok(FrozenPacket {
                packet_id: r.get(0)?,
                packet_locator: r.get(1)?,
                record_digest: r.get(2)?,
                aggregate_digest: r.get(3)?,
                fixture_digest: r.get(4)?,
                frozen_at: r.get(5)?,
                runs: Vec::new(),
            })
        },
    )?;
    rows.into_iter()
        .map(|mut p| {
            p.runs = facts::bundles_on_fixture(store, &p.fixture_digest)?
                .into_iter()
                .map(|b| b.bundle_id.to_string())
                .collect();
            Ok(p)
        })
        .collect()
}
