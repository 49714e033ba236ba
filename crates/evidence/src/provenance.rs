//! Where a digest is used: the answer to `coffer where`, gathered from the
//! CAS's roots and the evidence tables in one place.

use crate::error::Result;
use coffer_base::digest::Digest;
use coffer_store::catalog::ObjectRow;
use coffer_store::Store;

use crate::bundle::records::{self, ArtifactRow};
use crate::exports::{self, ExportRow};

/// One root holding an object.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RootRef {
    /// What kind of holder (`put`, `bundle`, `packet`, ...).
    pub kind: String,
    /// The holder's name within its kind.
    pub name: String,
}

/// Everything that holds or derives from one digest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Whereabouts {
    /// The digest asked about.
    pub digest: Digest,
    /// Its catalog row, when the store holds it.
    pub object: Option<ObjectRow>,
    /// Bundles whose manifest it is.
    pub bundle_manifests: Vec<crate::ids::BundleId>,
    /// Bundle artifacts stored as it.
    pub bundle_artifacts: Vec<ArtifactRow>,
    /// Every root holding it.
    pub roots: Vec<RootRef>,
    /// Exports that hold it or derive from it.
    pub exports: Vec<ExportRow>,
    /// Runs made on it as their fixture (`run.fixture.digest`), with their
    /// labels.
    pub fixture_runs: Vec<FixtureRun>,
}

/// A run made on a fixture.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FixtureRun {
    /// The run's bundle.
    pub bundle_id: crate::ids::BundleId,
    /// Its labels (the experiment it belongs to, say).
    pub labels: std::collections::BTreeMap<String, String>,
}

impl Whereabouts {
    /// True when the store knows the digest: it holds the object, an
    /// export derives from it, or runs name it as their fixture.
    pub fn is_known(&self) -> bool {
        self.object.is_some() || !self.exports.is_empty() || !self.fixture_runs.is_empty()
    }

    /// Roots other than the bundles and exports listed on their own.
    pub fn other_roots(&self) -> impl Iterator<Item = &RootRef> {
        self.roots
            .iter()
            .filter(|r| r.kind != records::BUNDLE_ROOT && r.kind != exports::EXPORT_ROOT)
    }
}

/// Where `digest` is used.
pub fn locate(store: &Store, digest: &Digest) -> Result<Whereabouts> {
    let catalog = store.catalog();
    let fixture_runs = crate::bundle::facts::bundles_on_fixture(store, digest)?
        .into_iter()
        .map(|b| {
            Ok(FixtureRun {
                labels: crate::bundle::labels::of(catalog, &b.bundle_id)?,
                bundle_id: b.bundle_id.clone(),
            })
        })
        .collect::<Result<_>>()?;
    Ok(Whereabouts {
        fixture_runs,
        digest: *digest,
        object: catalog.object(digest)?,
        bundle_manifests: records::bundles_with_manifest(catalog, digest)?,
        bundle_artifacts: records::artifacts_with_digest(catalog, digest)?,
        roots: catalog
            .roots_of(digest)?
            .into_iter()
            .map(|(kind, name)| RootRef { kind, name })
            .collect(),
        exports: exports::exports_of(catalog, digest)?,
    })
}
