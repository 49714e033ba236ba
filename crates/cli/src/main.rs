//! `coffer`: the command-line face of coffer-store and coffer-export.
//!
//! This crate only parses arguments, calls the libraries and renders a
//! [`report::Report`]; every rule lives in the libraries.

mod cmd;
mod examples;
mod interrupt;
mod progress;
mod report;
mod sarif;
mod shell;
mod table;

use coffer_base::codes;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{FromArgMatches, Parser, Subcommand};

use coffer_evidence::ids::BundleRef;
use report::{Issue, Report};

/// A content-addressed store and sanitized exporter for agent-evaluation evidence.
#[derive(Debug, Parser)]
#[command(
    name = "coffer",
    version,
    about = "A content-addressed store and sanitized exporter for agent-evaluation evidence",
    max_term_width = 100
)]
pub struct Cli {
    /// Store root (default: $COFFER_STORE, else the nearest .coffer in this
    /// directory or above, as git finds its repository; `init` makes
    /// ./.coffer). A store found that way must be owned by you and
    /// writable only by you; one named here is used as it is.
    #[arg(long, global = true, help_heading = GLOBAL)]
    store: Option<PathBuf>,
    /// Print one `coffer.result/v1` JSON object on stdout.
    #[arg(long, global = true, help_heading = GLOBAL)]
    json: bool,
    /// Print nothing but errors.
    #[arg(short, long, global = true, help_heading = GLOBAL)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

/// The heading global options are listed under in every command's help.
const GLOBAL: &str = "Global options";

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a store (or finish an interrupted init); an existing store is left as it is.
    Init {
        /// Keep objects and refs in an S3-compatible bucket: `s3://bucket/prefix`.
        /// Credentials come from the AWS_* environment only.
        #[arg(long, value_name = "URL")]
        backend: Option<String>,
        /// Endpoint of an S3-compatible server (e.g. http://127.0.0.1:9000).
        #[arg(long, value_name = "URL", requires = "backend")]
        endpoint: Option<String>,
    },
    /// The catalog: rebuild it from the refs in the store's backend.
    Catalog {
        #[command(subcommand)]
        cmd: CatalogCmd,
    },
    /// Copy every object and ref this store has and DEST lacks, verifying each
    /// object, then update DEST's catalog.
    Mirror {
        /// Root of another store (local, or one whose objects are in a bucket).
        dest: PathBuf,
    },
    /// Store files, directories (recursively) or `-` (stdin); prints each digest.
    Put {
        /// Files, directories, or `-` for standard input.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Do not root the objects: gc may reclaim them after the grace period.
        #[arg(long)]
        no_pin: bool,
        /// The digest the (single) input must have; otherwise nothing is stored.
        #[arg(long, value_name = "DIGEST")]
        expect: Option<String>,
    },
    /// Write an object, verified, to stdout or to a new file; with --stdin,
    /// every object named on standard input into a directory.
    Get {
        /// `sha256:<64 hex>`, or a unique prefix of 8 or more hex digits.
        #[arg(required_unless_present = "stdin", conflicts_with = "stdin")]
        digest: Option<String>,
        /// Write here instead of stdout (with --stdin: a directory, created
        /// if absent, receiving `<64 hex>` files); an existing file is never
        /// replaced.
        #[arg(short, long, value_name = "FILE", required_if_eq("stdin", "true"))]
        output: Option<PathBuf>,
        /// Read digests from standard input, one per line; answer each with
        /// `<digest> <size>` or `<name> missing|ambiguous|invalid|exists`.
        #[arg(long)]
        stdin: bool,
    },
    /// Tell whether objects are present (exit 1 if any is not).
    Has {
        /// `sha256:<64 hex>` keys, or unique prefixes of 8 or more hex digits.
        #[arg(required_unless_present = "stdin", conflicts_with = "stdin")]
        digests: Vec<String>,
        /// Read digests from standard input, one per line, and answer each
        /// as read: `<digest> <size>` or `<name> missing|ambiguous|invalid`
        /// (the form of `git cat-file --batch-check`).
        #[arg(long)]
        stdin: bool,
    },
    /// List cataloged objects.
    Ls,
    /// Check the store; exit 1 on any finding.
    Fsck {
        /// Also decompress and re-hash every object.
        #[arg(long)]
        read_data: bool,
    },
    /// Remove unreachable objects, orphans and stale temps older than the grace period.
    Gc {
        /// Report what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
        /// Keep anything younger than this (e.g. 30s, 15m, 24h, 7d).
        #[arg(long, default_value = "24h", value_name = "DUR")]
        grace: String,
    },
    /// Move small loose objects into packs (a format-1 store becomes format 2).
    Repack,
    /// Object counts, logical vs stored bytes, dedup and compression ratios.
    Stats,
    /// Run bundles: validate, ingest, query, check out.
    Bundle {
        #[command(subcommand)]
        cmd: BundleCmd,
    },
    /// Task packets: validate, freeze, status, materialize.
    Packet {
        #[command(subcommand)]
        cmd: PacketCmd,
    },
    /// Every session event of the runs the filters select, one line each,
    /// with the run's bundle, model, task, terminal state and verifier
    /// outcome (for DuckDB, pandas, jq); streamed, in ingest order.
    Events(cmd::analysis::EventsArgs),
    /// Search the stored evidence of the runs the filters select for a
    /// regular expression: `BUNDLE:PATH:LINE: text`, every object verified.
    Grep(cmd::analysis::GrepArgs),
    /// Every bundle, packet and artifact that holds an object.
    Where {
        /// `sha256:<64 hex>`.
        digest: String,
    },
    /// Make, check, pack and unpack partner/public exports.
    Export {
        #[command(subcommand)]
        cmd: ExportCmd,
    },
    /// Scan files for credentials, local paths and placeholders (exit 1 on findings).
    Scan {
        /// Files or directories to scan (.json, .jsonl/.ndjson parsed; anything else as text).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Also look for this policy's sensitive values and extra rules.
        #[arg(long, value_name = "POLICY")]
        policy: Option<PathBuf>,
        /// Findings as `text` lines (`PATH:LINE:COL: CODE MESSAGE`) or as a
        /// SARIF 2.1.0 log on stdout (printed even with -q; not with --json).
        #[arg(long, value_enum, default_value = "text")]
        format: cmd::exports::ScanFormat,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout: `coffer man > coffer.1`.
    Man,
}

#[derive(Debug, Subcommand)]
enum CatalogCmd {
    /// Apply every ref in the backend that the catalog lacks (an empty
    /// catalog becomes the catalog of everything in the backend).
    Rebuild,
}

#[derive(Debug, Subcommand)]
enum ExportCmd {
    /// Build a sanitized export of a bundle, read it back, publish it.
    Create(cmd::exports::CreateArgs),
    /// Check an export tree independently (no source, no key needed).
    Verify {
        /// The export directory.
        #[arg(value_name = "EXPORT_DIR")]
        dest: PathBuf,
        /// Also check it was made with this policy (and scan for its values).
        policy: Option<PathBuf>,
        /// Environment variables named at create time with --redact-env.
        #[arg(long, value_name = "NAME", num_args = 1..)]
        redact_env: Vec<String>,
    },
    /// Write a verified export as a reproducible .tar.zst or .tar.gz.
    Pack {
        /// The export directory.
        #[arg(value_name = "EXPORT_DIR")]
        dest: PathBuf,
        /// The new archive (.tar.zst or .tar.gz); must not exist.
        archive: PathBuf,
    },
    /// Write one self-contained HTML page to look at an export tree: its
    /// manifest, exclusions, artifacts, timeline and patch.
    View {
        /// The export directory.
        #[arg(value_name = "EXPORT_DIR")]
        dest: PathBuf,
        /// The new page (.html); must not exist.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Unpack an export archive into a new directory, verified.
    Unpack {
        /// The archive (.tar.zst or .tar.gz).
        archive: PathBuf,
        /// Destination directory; must not exist.
        dest: PathBuf,
    },
    /// List the exports recorded in the catalog: time, class, source, destination, policy.
    Ls {
        /// Only the exports of this source bundle (id or manifest digest).
        #[arg(long, value_name = "BUNDLE")]
        source: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum PacketCmd {
    /// List the frozen packets, each with the stored runs made on its fixture.
    Ls,
    /// Check a packet and its components (fixture limits, digests, review binding).
    Validate {
        /// The packet root (locators are relative to it).
        root: PathBuf,
        /// The packet file, inside ROOT.
        packet: PathBuf,
    },
    /// Store every component and fixture member; write the freeze record beside the packet.
    Freeze {
        /// The packet root.
        root: PathBuf,
        /// The packet file, inside ROOT.
        packet: PathBuf,
    },
    /// frozen, changed (with components), unfrozen, unadmitted or invalid.
    Status {
        /// The packet root.
        root: PathBuf,
        /// The packet file, inside ROOT.
        packet: PathBuf,
    },
    /// Write the frozen fixture's allowlisted workspace from the store into a new directory.
    Materialize {
        /// The packet root.
        root: PathBuf,
        /// The packet file, inside ROOT.
        packet: PathBuf,
        /// Destination; must not exist.
        dest: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum BundleCmd {
    /// Check a bundle directory against the evidence contract; reports every problem.
    Validate {
        /// The bundle directory (holding manifest.json).
        dir: PathBuf,
    },
    /// Write every evidence file's digest and size into the manifest (for
    /// harnesses that do not hash); refuses, writing nothing, what it cannot make valid.
    Seal {
        /// The bundle directory (holding manifest.json).
        dir: PathBuf,
    },
    /// Validate a bundle and archive it immutably.
    Ingest {
        /// Bundle directories (each holding manifest.json), ingested one
        /// after another, each on its own.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// A label to give the bundle (`experiment=ablation-3`), catalog
        /// metadata outside the immutable bundle; repeat for several.
        #[arg(long = "label", value_name = "KEY=VALUE", value_parser = cmd::bundles::parse_label)]
        labels: Vec<coffer_evidence::bundle::labels::Change>,
    },
    /// Set or remove labels of a stored bundle; each change is kept with its time.
    Label {
        /// Bundle id or manifest digest.
        bundle: String,
        /// Labels to set.
        #[arg(value_name = "KEY=VALUE", value_parser = cmd::bundles::parse_label)]
        set: Vec<coffer_evidence::bundle::labels::Change>,
        /// A label to remove; repeat for several.
        #[arg(long = "remove", value_name = "KEY")]
        remove: Vec<String>,
    },
    /// List ingested bundles.
    Ls(cmd::bundles::LsFilters),
    /// Runs grouped by model, task, harness or label: passed, failed, pass
    /// rate with its 95% Wilson interval, median duration and events.
    Stats(cmd::analysis::StatsArgs),
    /// Show one bundle: summary, artifacts, dedup.
    Show {
        /// Bundle id or manifest digest.
        bundle: String,
    },
    /// Rebuild a bundle byte-for-byte into a new directory.
    Checkout {
        /// Bundle id or manifest digest.
        bundle: String,
        /// Destination; must not exist.
        dest: PathBuf,
    },
    /// Write one self-contained HTML page to look at a stored run: header,
    /// artifacts, a paged timeline of its session and its patch.
    View {
        /// Bundle id or manifest digest.
        bundle: String,
        /// The new page (.html); must not exist.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Compare two stored bundles: manifest fields, shared and changed artifacts, sessions.
    Diff {
        /// First bundle (id or manifest digest).
        a: String,
        /// Second bundle.
        b: String,
    },
    /// Print one file of a stored bundle, verified (like `get`, by path).
    Cat {
        /// Bundle id or manifest digest.
        bundle: String,
        /// `manifest.json`, an artifact's relative path, or its artifact id.
        file: String,
        /// Write here instead of stdout; an existing file is never replaced.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

impl Command {
    fn name(&self) -> &'static str {
        match self {
            Command::Init { .. } => "init",
            Command::Catalog { cmd } => match cmd {
                CatalogCmd::Rebuild => "catalog rebuild",
            },
            Command::Mirror { .. } => "mirror",
            Command::Put { .. } => "put",
            Command::Get { .. } => "get",
            Command::Has { .. } => "has",
            Command::Ls => "ls",
            Command::Fsck { .. } => "fsck",
            Command::Gc { .. } => "gc",
            Command::Repack => "repack",
            Command::Stats => "stats",
            Command::Bundle { cmd } => match cmd {
                BundleCmd::Validate { .. } => "bundle validate",
                BundleCmd::Seal { .. } => "bundle seal",
                BundleCmd::Ingest { .. } => "bundle ingest",
                BundleCmd::Label { .. } => "bundle label",
                BundleCmd::Ls(_) => "bundle ls",
                BundleCmd::Stats(_) => "bundle stats",
                BundleCmd::Show { .. } => "bundle show",
                BundleCmd::Checkout { .. } => "bundle checkout",
                BundleCmd::View { .. } => "bundle view",
                BundleCmd::Cat { .. } => "bundle cat",
                BundleCmd::Diff { .. } => "bundle diff",
            },
            Command::Packet { cmd } => match cmd {
                PacketCmd::Ls => "packet ls",
                PacketCmd::Validate { .. } => "packet validate",
                PacketCmd::Freeze { .. } => "packet freeze",
                PacketCmd::Status { .. } => "packet status",
                PacketCmd::Materialize { .. } => "packet materialize",
            },
            Command::Where { .. } => "where",
            Command::Events(_) => "events",
            Command::Grep(_) => "grep",
            Command::Completions { .. } => "completions",
            Command::Man => "man",
            Command::Export { cmd } => match cmd {
                ExportCmd::Create(_) => "export create",
                ExportCmd::Verify { .. } => "export verify",
                ExportCmd::Pack { .. } => "export pack",
                ExportCmd::View { .. } => "export view",
                ExportCmd::Unpack { .. } => "export unpack",
                ExportCmd::Ls { .. } => "export ls",
            },
            Command::Scan { .. } => "scan",
        }
    }
}

/// The store a command uses, and whether the user named it: `--store`,
/// else `$COFFER_STORE`, else for `init` `./.coffer`, else the nearest
/// directory holding a `.coffer` store (one with `STORE-FORMAT`), this one
/// or above, else `./.coffer` (whose absence the command then reports).
/// Only `--store` is named; the others are found, and a found store must
/// pass [`coffer_store::layout::check_trusted`].
fn choose_store(flag: Option<PathBuf>, init: bool) -> (PathBuf, bool) {
    if let Some(p) = flag {
        return (p, true);
    }
    if let Some(p) = std::env::var_os("COFFER_STORE").filter(|v| !v.is_empty()) {
        return (PathBuf::from(p), false);
    }
    let here = PathBuf::from(".coffer");
    if init {
        return (here, false);
    }
    let Ok(cwd) = std::env::current_dir() else {
        return (here, false);
    };
    let found = cwd
        .ancestors()
        .map(|d| d.join(".coffer"))
        .find(|s| s.join(coffer_store::entries::FORMAT_FILE).is_file())
        .unwrap_or(here);
    (found, false)
}

/// Global flags every command sees.
pub struct Ctx {
    store: PathBuf,
    /// Whether `--store` named the store (else it was found, and is
    /// checked before use).
    store_named: bool,
    json: bool,
    quiet: bool,
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match examples::command()
        .try_get_matches_from(&args)
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => return usage_error(e, &args),
    };
    // These print generated text, not a report, and need no store.
    match cli.command {
        Command::Completions { shell } => return shell::completions(shell),
        Command::Man => return shell::man(),
        _ => {}
    }
    let is_init = matches!(cli.command, Command::Init { .. });
    let (store, store_named) = choose_store(cli.store, is_init);
    let ctx = Ctx {
        store,
        store_named,
        json: cli.json,
        quiet: cli.quiet,
    };
    let name = cli.command.name();
    if interrupt::honoured_by(name) {
        interrupt::watch();
    }
    let report = run(&ctx, cli.command);
    let mut report = report;
    report.command = name.to_string();
    for issue in &mut report.issues {
        if issue.code == codes::io::INTERRUPTED {
            issue.message = interrupt::outcome(name).to_string();
        }
    }
    report.emit(ctx.json, ctx.quiet)
}

/// Runs one command (all but the generated-text ones) against `ctx`.
fn run(ctx: &Ctx, command: Command) -> Report {
    match command {
        Command::Init { backend, endpoint } => {
            cmd::admin::init(ctx, backend.as_deref(), endpoint.as_deref())
        }
        Command::Catalog { cmd } => match cmd {
            CatalogCmd::Rebuild => cmd::admin::rebuild(ctx),
        },
        Command::Mirror { dest } => cmd::admin::mirror(ctx, &dest),
        Command::Put {
            paths,
            no_pin,
            expect,
        } => cmd::objects::put(ctx, &paths, no_pin, expect.as_deref()),
        Command::Get {
            output: Some(dir),
            stdin: true,
            ..
        } => cmd::batch::get(ctx, &dir),
        Command::Get { digest, output, .. } => cmd::objects::get(
            ctx,
            digest.as_deref().unwrap_or_default(),
            output.as_deref(),
        ),
        Command::Has { stdin: true, .. } => cmd::batch::has(ctx),
        Command::Has { digests, .. } => cmd::objects::has(ctx, &digests),
        Command::Ls => cmd::objects::ls(ctx),
        Command::Fsck { read_data } => cmd::admin::fsck(ctx, read_data),
        Command::Gc { dry_run, grace } => cmd::admin::gc(ctx, dry_run, &grace),
        Command::Repack => cmd::admin::repack(ctx),
        Command::Stats => cmd::admin::stats(ctx),
        Command::Bundle { cmd } => run_bundle(ctx, cmd),
        Command::Packet { cmd } => run_packet(ctx, cmd),
        Command::Where { digest } => cmd::bundles::where_is(ctx, &digest),
        Command::Events(args) => cmd::analysis::events(ctx, &args),
        Command::Grep(args) => cmd::analysis::grep(ctx, &args),
        Command::Export { cmd } => run_export(ctx, cmd),
        Command::Scan {
            paths,
            policy,
            format,
        } => cmd::exports::scan(ctx, &paths, policy.as_deref(), format),
        Command::Completions { .. } | Command::Man => {
            unreachable!("printed before the store is found")
        }
    }
}

/// Runs one `bundle` subcommand.
fn run_bundle(ctx: &Ctx, cmd: BundleCmd) -> Report {
    match cmd {
        BundleCmd::Validate { dir } => cmd::bundles::validate(ctx, &dir),
        BundleCmd::Seal { dir } => cmd::bundles::seal(&dir),
        BundleCmd::Ingest { dirs, labels } => cmd::bundles::ingest(ctx, &dirs, &labels),
        BundleCmd::Label {
            bundle,
            set,
            remove,
        } => cmd::bundles::label(ctx, &BundleRef::parse(&bundle), &set, &remove),
        BundleCmd::Ls(filters) => cmd::bundles::ls(ctx, &filters),
        BundleCmd::Stats(args) => cmd::analysis::stats(ctx, &args),
        BundleCmd::Show { bundle } => cmd::bundles::show(ctx, &BundleRef::parse(&bundle)),
        BundleCmd::Checkout { bundle, dest } => {
            cmd::bundles::checkout(ctx, &BundleRef::parse(&bundle), &dest)
        }
        BundleCmd::View { bundle, output } => {
            cmd::bundles::view(ctx, &BundleRef::parse(&bundle), &output)
        }
        BundleCmd::Diff { a, b } => {
            cmd::bundles::diff(ctx, &BundleRef::parse(&a), &BundleRef::parse(&b))
        }
        BundleCmd::Cat {
            bundle,
            file,
            output,
        } => cmd::bundles::cat(ctx, &BundleRef::parse(&bundle), &file, output.as_deref()),
    }
}

/// Runs one `packet` subcommand.
fn run_packet(ctx: &Ctx, cmd: PacketCmd) -> Report {
    match cmd {
        PacketCmd::Ls => cmd::packets::ls(ctx),
        PacketCmd::Validate { root, packet } => cmd::packets::validate(ctx, &root, &packet),
        PacketCmd::Freeze { root, packet } => cmd::packets::freeze(ctx, &root, &packet),
        PacketCmd::Status { root, packet } => cmd::packets::status(ctx, &root, &packet),
        PacketCmd::Materialize { root, packet, dest } => {
            cmd::packets::materialize(ctx, &root, &packet, &dest)
        }
    }
}

/// Runs one `export` subcommand.
fn run_export(ctx: &Ctx, cmd: ExportCmd) -> Report {
    match cmd {
        ExportCmd::Create(a) => cmd::exports::create(ctx, &a),
        ExportCmd::Verify {
            dest,
            policy,
            redact_env,
        } => cmd::exports::verify(ctx, &dest, policy.as_deref(), &redact_env),
        ExportCmd::Pack { dest, archive } => cmd::exports::pack(ctx, &dest, &archive),
        ExportCmd::View { dest, output } => cmd::exports::view(&dest, &output),
        ExportCmd::Unpack { archive, dest } => cmd::exports::unpack(ctx, &archive, &dest),
        ExportCmd::Ls { source } => cmd::exports::ls(ctx, source.as_deref()),
    }
}

/// The subcommand words of a command line clap rejected (for the envelope).
fn guess_command(args: &[std::ffi::OsString]) -> String {
    let mut words = args.iter().skip(1).filter_map(|a| a.to_str());
    let mut out = Vec::new();
    while let Some(w) = words.next() {
        if w == "--store" {
            words.next();
        } else if !w.starts_with('-') {
            out.push(w);
            if out.len() == 2 || !matches!(w, "bundle" | "packet" | "export") {
                break;
            }
        }
    }
    out.join(" ")
}

fn usage_error(e: clap::Error, args: &[std::ffi::OsString]) -> ExitCode {
    let json = args.iter().any(|a| a == "--json");
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand if !json => {
            let _ = e.print();
            return ExitCode::from(2);
        }
        _ => {}
    }
    if !json {
        let _ = e.print();
        return ExitCode::from(2);
    }
    let code = match e.kind() {
        ErrorKind::InvalidSubcommand => codes::usage::UNKNOWN_COMMAND,
        ErrorKind::UnknownArgument => codes::usage::UNKNOWN_ARGUMENT,
        ErrorKind::MissingRequiredArgument
        | ErrorKind::MissingSubcommand
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => codes::usage::MISSING_ARGUMENT,
        _ => codes::usage::INVALID_ARGUMENT,
    };
    let text = e.to_string();
    let body = text.split("\n\nUsage:").next().unwrap_or_default();
    let body = body.strip_prefix("error: ").unwrap_or(body);
    let message = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut report = Report::from_issues(
        vec![Issue::about(code, None, message)],
        serde_json::Value::Null,
        String::new(),
    );
    report.command = guess_command(args);
    report.emit(true, false)
}
