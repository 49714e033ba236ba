//! Task packets: validation, bounded fixture reading, freeze records,
//! fixture dedup and materialization.

pub mod check;
pub mod freeze;
pub mod listing;
pub mod model;

pub use freeze::{PacketReport, PacketState};

/// Root kind of a packet's components, tree and freeze record.
pub const PACKET_ROOT: &str = "packet";
/// Root kind of fixture members (name `<packet id>:<member path>`).
pub const MEMBER_ROOT: &str = "fixture-member";
