//! Every stable `class.name` issue code, in one place.
//!
//! Scripts match on these codes, so a code never changes meaning once
//! released. docs/CLI.md lists each with its meaning (the bundle
//! contract's rules in docs/RULES.md, one code each), and a test below
//! checks the two lists against each other, both ways;
//! `tests/e2e/architecture.rs` checks that no other source spells a code.
//! The class (the part before the dot) decides the status and exit code
//! (docs/CLI.md, "Status and exit code").

/// Declares the class modules and [`ALL`] from one list, so a code cannot
/// be declared without being listed.
macro_rules! codes {
    ($( $(#[$cm:meta])* $class:ident { $( $(#[$m:meta])* $name:ident = $value:literal; )* } )*) => {
        $(
            $(#[$cm])*
            pub mod $class {
                $( $(#[$m])* pub const $name: &str = $value; )*
            }
        )*
        /// Every code, class by class.
        pub const ALL: &[&str] = &[ $( $( $class::$name, )* )* ];
    };
}

/// The classes, in the order of docs/CLI.md.
pub const CLASSES: [&str; 7] = [
    "usage",
    "validation",
    "integrity",
    "conflict",
    "policy",
    "limit",
    "io",
];

codes! {
    /// Command-line errors (exit 2).
    usage {
        /// A digest prefix is the start of more than one cataloged object.
        AMBIGUOUS_DIGEST = "usage.ambiguous_digest";
        /// Export arguments.
        ARCHIVE_NAME = "usage.archive_name";
        /// Export arguments.
        ENV_NOT_SET = "usage.env_not_set";
        /// Command line errors.
        INVALID_ARGUMENT = "usage.invalid_argument";
        /// `init --backend` is not `s3://bucket/prefix` (or `--endpoint` not an http(s)
        /// URL).
        INVALID_BACKEND = "usage.invalid_backend";
        /// An argument is not `sha256:<64 lowercase hex>` (nor, where a prefix is taken, 8
        /// to 63 hex digits).
        INVALID_DIGEST = "usage.invalid_digest";
        /// `--grace` is not a duration.
        INVALID_DURATION = "usage.invalid_duration";
        /// Export arguments.
        KEY_FILE = "usage.key_file";
        /// Export arguments.
        KEY_FILE_MODE = "usage.key_file_mode";
        /// Command line errors.
        MISSING_ARGUMENT = "usage.missing_argument";
        /// Export arguments.
        REPORT_FORMAT = "usage.report_format";
        /// Export arguments.
        REPORT_INSIDE_EXPORT = "usage.report_inside_export";
        /// Command line errors.
        UNKNOWN_ARGUMENT = "usage.unknown_argument";
        /// Command line errors.
        UNKNOWN_COMMAND = "usage.unknown_command";
    }
    /// Input that breaks a schema, a contract rule or a format (exit 1).
    validation {
        /// Member names that escape, are absolute, non-canonical (`./a`, `a//b`), or hold
        /// `.git`, control characters, backslashes or non-UTF-8; segments that alias
        /// another name elsewhere (a trailing dot or space, an 8.3 short name like `GIT~1`,
        /// zero-width or bidirectional characters); AppleDouble `._` files.
        ARCHIVE_ABSOLUTE_PATH = "validation.archive_absolute_path";
        /// Duplicate names, case-fold collisions, a file that is also a directory prefix.
        ARCHIVE_CASE_COLLISION = "validation.archive_case_collision";
        /// Truncated or corrupt gzip, zstd or tar: a bad or missing gzip trailer (CRC,
        /// ISIZE), a cut or damaged zstd frame, a tar stream without its end marker (two
        /// zero blocks), a member shorter than its header, a malformed PAX header, an
        /// extension header with no member after it.
        ARCHIVE_CORRUPT = "validation.archive_corrupt";
        /// Duplicate names, case-fold collisions, a file that is also a directory prefix.
        ARCHIVE_DUPLICATE_MEMBER = "validation.archive_duplicate_member";
        /// Not gzip (packet fixtures, `tar-gzip-v1`) or not gzip or zstd (`export unpack`).
        ARCHIVE_FORMAT = "validation.archive_format";
        /// Link, device/FIFO or other non-file member (a sparse file, a volume label).
        ARCHIVE_LINK = "validation.archive_link";
        /// Member names that escape, are absolute, non-canonical (`./a`, `a//b`), or hold
        /// `.git`, control characters, backslashes or non-UTF-8; segments that alias
        /// another name elsewhere (a trailing dot or space, an 8.3 short name like `GIT~1`,
        /// zero-width or bidirectional characters); AppleDouble `._` files.
        ARCHIVE_MEMBER_NAME = "validation.archive_member_name";
        /// Link, device/FIFO or other non-file member (a sparse file, a volume label).
        ARCHIVE_MEMBER_TYPE = "validation.archive_member_type";
        /// Member names that escape, are absolute, non-canonical (`./a`, `a//b`), or hold
        /// `.git`, control characters, backslashes or non-UTF-8; segments that alias
        /// another name elsewhere (a trailing dot or space, an 8.3 short name like `GIT~1`,
        /// zero-width or bidirectional characters); AppleDouble `._` files.
        ARCHIVE_NONCANONICAL_NAME = "validation.archive_noncanonical_name";
        /// Duplicate names, case-fold collisions, a file that is also a directory prefix.
        ARCHIVE_PATH_CONFLICT = "validation.archive_path_conflict";
        /// Member names that escape, are absolute, non-canonical (`./a`, `a//b`), or hold
        /// `.git`, control characters, backslashes or non-UTF-8; segments that alias
        /// another name elsewhere (a trailing dot or space, an 8.3 short name like `GIT~1`,
        /// zero-width or bidirectional characters); AppleDouble `._` files.
        ARCHIVE_PATH_TRAVERSAL = "validation.archive_path_traversal";
        /// Link, device/FIFO or other non-file member (a sparse file, a volume label).
        ARCHIVE_SPECIAL_MEMBER = "validation.archive_special_member";
        /// Bytes other than zero padding after the tar end marker (a concatenated second
        /// archive), or bytes that start no gzip member or zstd frame after the compressed
        /// stream.
        ARCHIVE_TRAILING_DATA = "validation.archive_trailing_data";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/capture-assessment-mode-mismatch` breaks it.
        ASSESSMENT_MODE_MISMATCH = "validation.assessment_mode_mismatch";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/capture-beta-reason-scope` breaks it.
        BETA_REASON_SCOPE = "validation.beta_reason_scope";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/capture-capability-reason-mismatch` breaks it.
        CAPABILITY_REASON_MISMATCH = "validation.capability_reason_mismatch";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/capture-capability-unexplained` breaks it.
        CAPABILITY_UNEXPLAINED = "validation.capability_unexplained";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/capture-capability-without-evidence` breaks it.
        CAPABILITY_WITHOUT_EVIDENCE = "validation.capability_without_evidence";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/capture-bundle-mismatch` breaks it.
        CAPTURE_BUNDLE_MISMATCH = "validation.capture_bundle_mismatch";
        /// (warning) a gap declared by an incomplete capture report.
        CAPTURE_INCOMPLETE = "validation.capture_incomplete";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/capture-report-count`
        /// breaks it.
        CAPTURE_REPORT_COUNT = "validation.capture_report_count";
        /// The capture report is declared partner or public.
        CAPTURE_REPORT_SHARED = "validation.capture_report_shared";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/path-case-fold-collision` breaks it.
        CASE_FOLD_COLLISION = "validation.case_fold_collision";
        /// (archives too) a member name segment that is a Windows device name.
        DEVICE_NAME = "validation.device_name";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/digest-class-conflict`
        /// breaks it.
        DIGEST_CLASS_CONFLICT = "validation.digest_class_conflict";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/duplicate-artifact-id`
        /// breaks it.
        DUPLICATE_ARTIFACT_ID = "validation.duplicate_artifact_id";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/verifier-duplicate-assertion-id` breaks it.
        DUPLICATE_ASSERTION_ID = "validation.duplicate_assertion_id";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/manifest-duplicate-key` breaks it.
        DUPLICATE_KEY = "validation.duplicate_key";
        /// Two descriptors name the same bundle-relative path.
        DUPLICATE_PATH = "validation.duplicate_path";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/duplicate-runtime`
        /// breaks it.
        DUPLICATE_RUNTIME = "validation.duplicate_runtime";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/session-empty` breaks
        /// it.
        EMPTY_JSONL = "validation.empty_jsonl";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/export-bundle-mismatch` breaks it.
        EXPORT_BUNDLE_MISMATCH = "validation.export_bundle_mismatch";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/export-class-mismatch`
        /// breaks it.
        EXPORT_CLASS_MISMATCH = "validation.export_class_mismatch";
        /// Export tree structure (readback and verify).
        EXPORT_MANIFEST = "validation.export_manifest";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/export-not-ready`
        /// breaks it.
        EXPORT_NOT_READY = "validation.export_not_ready";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/export-unknown-artifact` breaks it.
        EXPORT_UNKNOWN_ARTIFACT = "validation.export_unknown_artifact";
        /// Final scan: hidden reasoning or raw body fields, a secret-named field with a
        /// value, a thinking record with content, a placeholder not issued by this export.
        FORBIDDEN_FIELD = "validation.forbidden_field";
        /// A bundle file with more than one link (it could change through another name).
        HARD_LINK = "validation.hard_link";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/harness-not-in-runtime` breaks it.
        HARNESS_NOT_IN_RUNTIME = "validation.harness_not_in_runtime";
        /// Final scan: hidden reasoning or raw body fields, a secret-named field with a
        /// value, a thinking record with content, a placeholder not issued by this export.
        HIDDEN_REASONING = "validation.hidden_reasoning";
        /// Final scan: a rule, a policy value, an original identity, a user name or an
        /// absolute local path in the tree.
        IDENTITY_IN_EXPORT = "validation.identity_in_export";
        /// An include path selects no fixture file or directory.
        INCLUDE_PATH_UNMATCHED = "validation.include_path_unmatched";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/capture-incomplete-without-gaps` breaks it.
        INCOMPLETE_WITHOUT_GAPS = "validation.incomplete_without_gaps";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/manifest-integer-out-of-range` breaks it.
        INTEGER_OUT_OF_RANGE = "validation.integer_out_of_range";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/manifest-invalid-json`
        /// breaks it.
        INVALID_JSON = "validation.invalid_json";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/manifest-invalid-utf8`
        /// breaks it.
        INVALID_UTF8 = "validation.invalid_utf8";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/session-blank-line`
        /// breaks it.
        JSONL_BLANK_LINE = "validation.jsonl_blank_line";
        /// Two keys of one object became equal after scrubbing.
        KEY_COLLISION = "validation.key_collision";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/kind-authority` breaks
        /// it.
        KIND_AUTHORITY = "validation.kind_authority";
        /// Final scan: a rule, a policy value, an original identity, a user name or an
        /// absolute local path in the tree.
        LOCAL_PATH_IN_EXPORT = "validation.local_path_in_export";
        /// Final scan: a rule, a policy value, an original identity, a user name or an
        /// absolute local path in the tree.
        LOCAL_USER_IN_EXPORT = "validation.local_user_in_export";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/media-type` breaks it.
        MEDIA_TYPE = "validation.media_type";
        /// Export tree structure (readback and verify).
        MISSING_FILE = "validation.missing_file";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/native-reference-forbidden` breaks it.
        NATIVE_REFERENCE_FORBIDDEN = "validation.native_reference_forbidden";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/native-session-unbound` breaks it.
        NATIVE_SESSION_UNBOUND = "validation.native_session_unbound";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/native-trace-unbound`
        /// breaks it.
        NATIVE_TRACE_UNBOUND = "validation.native_trace_unbound";
        /// A bundle or packet root that is not a directory.
        NOT_A_DIRECTORY = "validation.not_a_directory";
        /// The store root has no `STORE-FORMAT` (or is not a directory).
        NOT_A_STORE = "validation.not_a_store";
        /// An input is a symlink, directory or special file where a file is needed.
        NOT_REGULAR_FILE = "validation.not_regular_file";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/observational-task-failure` breaks it.
        OBSERVATIONAL_TASK_FAILURE = "validation.observational_task_failure";
        /// `packet status`: the packet does not validate.
        PACKET_INVALID = "validation.packet_invalid";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/path-ancestor` breaks
        /// it.
        PATH_ANCESTOR = "validation.path_ancestor";
        /// Final scan: hidden reasoning or raw body fields, a secret-named field with a
        /// value, a thinking record with content, a placeholder not issued by this export.
        PLACEHOLDER_UNKNOWN = "validation.placeholder_unknown";
        /// `maxStringBytes` > `maxArtifactBytes`; an extra rule that does not compile.
        POLICY_LIMITS = "validation.policy_limits";
        /// Export tree structure (readback and verify).
        POLICY_MISMATCH = "validation.policy_mismatch";
        /// `maxStringBytes` > `maxArtifactBytes`; an extra rule that does not compile.
        POLICY_RULE = "validation.policy_rule";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/provenance-cycle`
        /// breaks it.
        PROVENANCE_CYCLE = "validation.provenance_cycle";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/capture-qualification-unjustified` breaks it.
        QUALIFICATION_UNJUSTIFIED = "validation.qualification_unjustified";
        /// A warning of `export create --exclude-unverifiable`: a JSONL record left out,
        /// with the code that refused it.
        RECORD_EXCLUDED = "validation.record_excluded";
        /// Export tree structure (readback and verify).
        REFERENCE = "validation.reference";
        /// `export create --report`: a line of an exported file the report reads cannot be read.
        REPORT_INPUT = "validation.report_input";
        /// Provenance URL is not https, has no host, or carries credentials.
        REPOSITORY_URL = "validation.repository_url";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/path-reserved-manifest` breaks it.
        RESERVED_PATH = "validation.reserved_path";
        /// Restricted components vs assessment mode.
        RESTRICTED_FORBIDDEN = "validation.restricted_forbidden";
        /// Restricted components vs assessment mode.
        RESTRICTED_REQUIRED = "validation.restricted_required";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/retry-of-forbidden`
        /// breaks it.
        RETRY_OF_FORBIDDEN = "validation.retry_of_forbidden";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/retry-of-required`
        /// breaks it.
        RETRY_OF_REQUIRED = "validation.retry_of_required";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/retry-of-self` breaks
        /// it.
        RETRY_OF_SELF = "validation.retry_of_self";
        /// The review record does not bind this packet, its decision, reviewer or time.
        REVIEW_DECISION_MISMATCH = "validation.review_decision_mismatch";
        /// The review record does not bind this packet, its decision, reviewer or time.
        REVIEW_DIGEST_MISMATCH = "validation.review_digest_mismatch";
        /// The review record does not bind this packet, its decision, reviewer or time.
        REVIEW_MISMATCH = "validation.review_mismatch";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/sanitized-digest-mismatch` breaks it.
        SANITIZED_DIGEST_MISMATCH = "validation.sanitized_digest_mismatch";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/sanitized-from-required` breaks it.
        SANITIZED_FROM_REQUIRED = "validation.sanitized_from_required";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/sanitized-same-bytes`
        /// breaks it.
        SANITIZED_SAME_BYTES = "validation.sanitized_same_bytes";
        /// A sanitized descriptor lies at its source's path.
        SANITIZED_SAME_PATH = "validation.sanitized_same_path";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/sanitized-source-mismatch` breaks it.
        SANITIZED_SOURCE_MISMATCH = "validation.sanitized_source_mismatch";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/sanitized-source-missing` breaks it.
        SANITIZED_SOURCE_MISSING = "validation.sanitized_source_missing";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/manifest-unknown-field` breaks it.
        SCHEMA = "validation.schema";
        /// Final scan: hidden reasoning or raw body fields, a secret-named field with a
        /// value, a thinking record with content, a placeholder not issued by this export.
        SECRET_FIELD_IN_EXPORT = "validation.secret_field_in_export";
        /// Final scan: a rule, a policy value, an original identity, a user name or an
        /// absolute local path in the tree.
        SECRET_IN_EXPORT = "validation.secret_in_export";
        /// Final scan: a rule, a policy value, an original identity, a user name or an
        /// absolute local path in the tree.
        SENSITIVE_VALUE_IN_EXPORT = "validation.sensitive_value_in_export";
        /// A FIFO, socket or device inside a bundle.
        SPECIAL_FILE = "validation.special_file";
        /// A symlink inside a bundle; it is never followed.
        SYMLINK = "validation.symlink";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/terminal-combination`
        /// breaks it.
        TERMINAL_COMBINATION = "validation.terminal_combination";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/manifest-trailing-data` breaks it.
        TRAILING_DATA = "validation.trailing_data";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/manifest-unknown-schema-version` breaks it.
        UNKNOWN_SCHEMA_VERSION = "validation.unknown_schema_version";
        /// Export tree structure (readback and verify).
        UNLISTED_FILE = "validation.unlisted_file";
        /// A bundle contract rule (docs/RULES.md); `fixtures/invalid/path-absolute` breaks
        /// it.
        UNSAFE_PATH = "validation.unsafe_path";
        /// `STORE-FORMAT` names another format or version.
        UNSUPPORTED_STORE_FORMAT = "validation.unsupported_store_format";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/verifier-bundle-mismatch` breaks it.
        VERIFIER_BUNDLE_MISMATCH = "validation.verifier_bundle_mismatch";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/verifier-error-inconsistent` breaks it.
        VERIFIER_ERROR_INCONSISTENT = "validation.verifier_error_inconsistent";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/verifier-failed-inconsistent` breaks it.
        VERIFIER_FAILED_INCONSISTENT = "validation.verifier_failed_inconsistent";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/verifier-forbidden-observational` breaks it.
        VERIFIER_FORBIDDEN = "validation.verifier_forbidden";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/verifier-in-observational` breaks it.
        VERIFIER_IN_OBSERVATIONAL = "validation.verifier_in_observational";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/verifier-not-run-inconsistent` breaks it.
        VERIFIER_NOT_RUN_INCONSISTENT = "validation.verifier_not_run_inconsistent";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/verifier-outcome-required` breaks it.
        VERIFIER_OUTCOME_REQUIRED = "validation.verifier_outcome_required";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/verifier-passed-inconsistent` breaks it.
        VERIFIER_PASSED_INCONSISTENT = "validation.verifier_passed_inconsistent";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/verifier-workspace-unbound` breaks it.
        VERIFIER_WORKSPACE_UNBOUND = "validation.verifier_workspace_unbound";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/workspace-artifact-invalid` breaks it.
        WORKSPACE_ARTIFACT_INVALID = "validation.workspace_artifact_invalid";
        /// A bundle contract rule (docs/RULES.md);
        /// `fixtures/invalid/workspace-artifact-required` breaks it.
        WORKSPACE_ARTIFACT_REQUIRED = "validation.workspace_artifact_required";
    }
    /// Stored or written bytes that are not what they should be (exit 1).
    integrity {
        /// Re-ingest of a stored bundle from a directory whose files no longer match the
        /// manifest.
        BUNDLE_COPY_DIFFERS = "integrity.bundle_copy_differs";
        /// SQLite integrity check failed or schema newer than this build.
        CATALOG = "integrity.catalog";
        /// A root names an uncataloged object; a ref names a record that does not exist.
        DANGLING_REFERENCE = "integrity.dangling_reference";
        /// A pack's index does not decode, fails its checksum, or its pack is missing
        /// (fsck, reads).
        CORRUPT_PACK = "integrity.corrupt_pack";
        /// Bytes do not hash to the expected digest (also: a stored frame that does not
        /// decode).
        DIGEST_MISMATCH = "integrity.digest_mismatch";
        /// Two identities would share a pseudonym.
        IDENTITY_COLLISION = "integrity.identity_collision";
        /// Cataloged object whose file is gone.
        MISSING_OBJECT = "integrity.missing_object";
        /// Object file with no catalog row (fsck).
        ORPHAN_OBJECT = "integrity.orphan_object";
        /// Object kept in `quarantine/` (fsck).
        QUARANTINED_OBJECT = "integrity.quarantined_object";
        /// Bytes have another length than expected.
        SIZE_MISMATCH = "integrity.size_mismatch";
        /// A source file changed between the export's passes.
        SOURCE_CHANGED = "integrity.source_changed";
        /// Leftover temp in `tmp/` (fsck).
        STALE_TEMP = "integrity.stale_temp";
        /// (fsck, own store only) a ref the catalog has not applied: a command was
        /// interrupted between its ref and its commit; gc or `catalog rebuild` applies it.
        UNAPPLIED_REF = "integrity.unapplied_ref";
        /// Symlink or foreign entry inside the store.
        UNEXPECTED_ENTRY = "integrity.unexpected_entry";
    }
    /// Requests that conflict with what exists; nothing is replaced (exit 3).
    conflict {
        /// The attempt id belongs to another bundle.
        ATTEMPT_EXISTS = "conflict.attempt_exists";
        /// A different manifest is stored under this bundle id.
        BUNDLE_EXISTS = "conflict.bundle_exists";
        /// Coffer never replaces an existing file.
        DESTINATION_EXISTS = "conflict.destination_exists";
        /// `bundle seal`: the manifest changed while it was sealed; nothing was written.
        MANIFEST_CHANGED = "conflict.manifest_changed";
        /// The packet's components differ from its freeze record.
        PACKET_CHANGED = "conflict.packet_changed";
        /// Materialize of a packet that is not frozen (or changed).
        PACKET_NOT_FROZEN = "conflict.packet_not_frozen";
        /// `mirror`: the destination holds this ref with another target (not copied; the
        /// rest is).
        REF_EXISTS = "conflict.ref_exists";
        /// `init` on a store that already exists with another backend.
        STORE_EXISTS = "conflict.store_exists";
        /// `init` in a directory holding other things.
        STORE_ROOT_NOT_EMPTY = "conflict.store_root_not_empty";
    }
    /// Refusals by policy or contract; nothing is written (exit 3).
    policy {
        /// Export refusals (docs/EXPORT.md).
        CAPTURE_INCOMPLETE = "policy.capture_incomplete";
        /// Export refusals (docs/EXPORT.md).
        DERIVATIVE_SOURCE = "policy.derivative_source";
        /// Freezing a proposed or rejected packet.
        NOT_ADMITTED = "policy.not_admitted";
        /// Export refusals (docs/EXPORT.md).
        NOTHING_TO_EXPORT = "policy.nothing_to_export";
        /// A sensitive value under 8 bytes without `--force-short-values`.
        SENSITIVE_VALUE_TOO_SHORT = "policy.sensitive_value_too_short";
        /// Export refusals (docs/EXPORT.md).
        UNKNOWN_SHARING_CLASS = "policy.unknown_sharing_class";
        /// A store found by searching or through `$COFFER_STORE` is a symlink, owned by
        /// another user, or writable by its group or others (name it with `--store` to use
        /// it).
        UNSAFE_STORE = "policy.unsafe_store";
        /// Export refusals (docs/EXPORT.md).
        UNSUPPORTED_MEDIA_TYPE = "policy.unsupported_media_type";
    }
    /// Explicit bounds on bytes, depth, members and counts (exit 1).
    limit {
        /// Export unpack, which reads archives through the same reader as packet fixtures,
        /// with the same `validation.archive_*` and `limit.archive_member_name` codes; its
        /// byte and member bounds keep these two codes (512 MiB of members, 64 MiB of tar
        /// framing, 1 GiB compressed; 10,000 members).
        ARCHIVE_BYTES = "limit.archive_bytes";
        /// The packet's declared limits, enforced while reading.
        ARCHIVE_COMPRESSED_BYTES = "limit.archive_compressed_bytes";
        /// The packet's declared limits, enforced while reading.
        ARCHIVE_EXPANDED_BYTES = "limit.archive_expanded_bytes";
        /// A member name over 960 bytes, a GNU long name or PAX `path` over 4 KiB, a PAX
        /// header over 64 KiB: refused before the header's data is read.
        ARCHIVE_MEMBER_NAME = "limit.archive_member_name";
        /// The packet's declared limits, enforced while reading.
        ARCHIVE_MEMBERS = "limit.archive_members";
        /// Export refusals (docs/EXPORT.md).
        ARTIFACT_BYTES = "limit.artifact_bytes";
        /// A file named as input is larger than the bound for what it is (a document: 16
        /// MiB).
        INPUT_BYTES = "limit.input_bytes";
        /// A JSON document larger than its byte budget.
        JSON_BYTES = "limit.json_bytes";
        /// A JSON document nested deeper than its depth budget.
        JSON_DEPTH = "limit.json_depth";
        /// A JSON document with more values than its node budget.
        JSON_NODES = "limit.json_nodes";
        /// A JSONL line longer than its byte budget.
        JSONL_LINE_BYTES = "limit.jsonl_line_bytes";
        /// Export readback: a line of an exported JSONL file is longer than the reader's
        /// bound.
        LINE_BYTES = "limit.line_bytes";
        /// Export unpack, which reads archives through the same reader as packet fixtures,
        /// with the same `validation.archive_*` and `limit.archive_member_name` codes; its
        /// byte and member bounds keep these two codes (512 MiB of members, 64 MiB of tar
        /// framing, 1 GiB compressed; 10,000 members).
        MEMBERS = "limit.members";
        /// A bundle-relative path longer than 960 bytes.
        PATH_BYTES = "limit.path_bytes";
        /// A bundle-relative path segment longer than 255 bytes.
        PATH_SEGMENT_BYTES = "limit.path_segment_bytes";
        /// A bundle-relative path of more than 64 segments.
        PATH_SEGMENTS = "limit.path_segments";
        /// Export: more distinct secrets than one export tracks (it is refused rather
        /// than miss one).
        SECRETS = "limit.secrets";
        /// Export: a secret spread over a stream's pieces could begin further back than the
        /// 16 KiB window holds (docs/EXPORT.md, Secrets in pieces); the export fails rather
        /// than skip it.
        STREAM_WINDOW = "limit.stream_window";
        /// A sensitive-values file larger than its bound.
        VALUES_FILE_BYTES = "limit.values_file_bytes";
    }
    /// Operating system, catalog engine and remote backend failures (exit 1).
    io {
        /// Reading an archive failed in the operating system (not a format error).
        ARCHIVE_READ = "io.archive_read";
        /// Operating system and SQLite failures.
        BUSY = "io.busy";
        /// Operating system and SQLite failures.
        CATALOG = "io.catalog";
        /// Operating system and SQLite failures.
        CROSS_DEVICE = "io.cross_device";
        /// Operating system and SQLite failures.
        ERROR = "io.error";
        /// SIGINT or SIGTERM: the command stopped at a safe point, removed its
        /// temp files and stored nothing more (exit 130).
        INTERRUPTED = "io.interrupted";
        /// Operating system and SQLite failures.
        NO_SPACE = "io.no_space";
        /// No such object, bundle (or input file).
        NOT_FOUND = "io.not_found";
        /// Operating system and SQLite failures.
        PERMISSION_DENIED = "io.permission_denied";
        /// Operating system and SQLite failures.
        READ_ONLY = "io.read_only";
        /// The bucket refused or failed a request (message names the key and operation;
        /// retried 5 times first).
        REMOTE = "io.remote";
        /// An input changed while it was read.
        SOURCE_CHANGED = "io.source_changed";
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The codes a document names: every `class.name` in backticks.
    fn documented(doc: &str) -> BTreeSet<String> {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../docs")
                .join(doc),
        )
        .unwrap();
        text.split('`')
            .skip(1)
            .step_by(2)
            .filter(|s| {
                s.split_once('.').is_some_and(|(class, name)| {
                    super::CLASSES.contains(&class)
                        && !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                })
            })
            .map(String::from)
            .collect()
    }

    #[test]
    fn every_code_is_documented_and_every_documented_code_exists() {
        let ours: BTreeSet<String> = super::ALL.iter().map(|c| c.to_string()).collect();
        assert_eq!(ours.len(), super::ALL.len(), "a code is declared twice");
        let cli = documented("CLI.md");
        let docs: BTreeSet<String> = cli.union(&documented("RULES.md")).cloned().collect();
        let undocumented: Vec<_> = ours.difference(&docs).collect();
        assert!(
            undocumented.is_empty(),
            "codes missing from docs/CLI.md and docs/RULES.md: {undocumented:?}"
        );
        let unknown: Vec<_> = docs.difference(&ours).collect();
        assert!(
            unknown.is_empty(),
            "documented codes coffer never raises: {unknown:?}"
        );
        assert!(cli.len() > 100, "docs/CLI.md lists the codes");
    }

    #[test]
    fn a_constant_is_named_for_its_code() {
        assert_eq!(super::validation::INVALID_JSON, "validation.invalid_json");
        assert_eq!(super::io::NO_SPACE, "io.no_space");
        for code in super::ALL {
            let (class, name) = code.split_once('.').unwrap();
            assert!(super::CLASSES.contains(&class), "{code}");
            assert!(!name.is_empty() && !name.contains('.'), "{code}");
        }
    }
}
