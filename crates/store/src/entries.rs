//! Names of the entries of a store root: one place for each, below every
//! module that uses them. (Temp names are `coffer_base::temp`'s.)

/// Name of the format marker in the store root.
pub const FORMAT_FILE: &str = "STORE-FORMAT";
/// File name of the catalog inside the store root.
pub const CATALOG_FILE: &str = "catalog.sqlite";
/// Staging directory.
pub const TMP_DIR: &str = "tmp";
