//! Examples for every command's `--help` and for the man page, in one
//! table. A test parses every example with the real command line, so an
//! example that names a flag or argument the command does not take fails
//! the build's tests instead of misleading a reader.

use clap::{Command, CommandFactory};

use crate::Cli;

/// (command path, examples): each example is one `coffer …` line, and a
/// `# …` comment line may stand above it. `tests/e2e/examples.rs` runs
/// every line, in this order, in a work directory laid out as they
/// expect (`runs/attempt-17`, `tasks/calc`, `partner-policy.json`, …),
/// with the placeholder digests (`sha256:3f0c…`) replaced by real ones.
pub const EXAMPLES: &[(&str, &[&str])] = &[
    (
        "init",
        &[
            "coffer init",
            "coffer --store ~/evidence init",
            "# objects and refs in a bucket (credentials from AWS_*)",
            "coffer init --backend s3://evidence/coffer --endpoint http://127.0.0.1:9000",
        ],
    ),
    ("catalog rebuild", &["coffer catalog rebuild"]),
    (
        "mirror",
        &["coffer --store ~/backup init && coffer mirror ~/backup"],
    ),
    (
        "put",
        &[
            "coffer put fixtures/",
            "# check what arrives against the digest it must have",
            "cat fixture.tar.gz | coffer put - --expect sha256:3f0c…",
        ],
    ),
    (
        "get",
        &[
            "coffer get sha256:3f0c… -o copy.tar.gz",
            "coffer get sha256:3f0c… | tar -xz",
        ],
    ),
    ("has", &["coffer has sha256:3f0c… sha256:9b1e…"]),
    ("ls", &["coffer ls", "coffer --json ls"]),
    ("fsck", &["coffer fsck", "coffer fsck --read-data"]),
    (
        "gc",
        &["coffer gc --dry-run", "coffer gc --grace 7d"],
    ),
    ("repack", &["coffer repack && coffer fsck"]),
    ("stats", &["coffer stats"]),
    ("bundle validate", &["coffer bundle validate runs/attempt-17"]),
    (
        "bundle seal",
        &[
            "# a harness wrote the evidence but not its digests",
            "coffer bundle seal runs/attempt-17 && coffer bundle ingest runs/attempt-17",
        ],
    ),
    (
        "bundle ingest",
        &[
            "coffer bundle ingest runs/attempt-17",
            "coffer bundle ingest runs/attempt-16 --label experiment=ablation-3",
            "coffer bundle ingest runs/attempt-16 runs/attempt-17 --label experiment=ablation-3",
        ],
    ),
    (
        "bundle label",
        &[
            "coffer bundle label attempt-17 experiment=ablation-3 reviewer=jane",
            "coffer bundle label attempt-17 --remove reviewer",
        ],
    ),
    (
        "bundle ls",
        &[
            "coffer bundle ls --model 'anthropic/*' --terminal completed",
            "coffer bundle ls --since 7d --format csv > runs.csv",
            "coffer bundle ls --label 'experiment=ablation-*' --format jsonl",
            "# runs whose verifier failed after touching the parser",
            "coffer bundle ls --verifier failed --touched 'src/parser/*'",
        ],
    ),
    (
        "bundle stats",
        &[
            "# how did each model do in each experiment",
            "coffer bundle stats --by model --by label:experiment",
            "coffer bundle stats --by task --model 'anthropic/*' --format csv > tasks.csv",
        ],
    ),
    ("bundle show", &["coffer bundle show attempt-17", "coffer bundle show 77751c20"]),
    ("bundle checkout", &["coffer bundle checkout attempt-17 attempt-17-files"]),
    (
        "bundle view",
        &["coffer bundle view attempt-17 -o run-17.html"],
    ),
    ("bundle diff", &["coffer bundle diff attempt-16 attempt-17"]),
    (
        "bundle cat",
        &[
            "coffer bundle cat attempt-17 session.jsonl | head -n 5",
            "coffer bundle cat attempt-17 workspace.patch -o attempt-17.patch",
        ],
    ),
    ("packet ls", &["coffer packet ls"]),
    ("packet validate", &["coffer packet validate tasks/calc packet.json"]),
    ("packet freeze", &["coffer packet freeze tasks/calc packet.json"]),
    ("packet status", &["coffer packet status tasks/calc packet.json"]),
    (
        "packet materialize",
        &["coffer packet materialize tasks/calc packet.json calc-workspace"],
    ),
    ("where", &["coffer where sha256:3f0c…", "coffer where 3f0c1a2b"]),
    (
        "events",
        &[
            "coffer events --model 'anthropic/*' --type 'tool.*' > events.jsonl",
            "# every run's events as CSV, one row each, for a dataframe",
            "coffer events --format csv > events.csv",
        ],
    ),
    (
        "grep",
        &[
            "coffer grep 'Traceback' --in session --label experiment=ablation-3",
            "coffer grep -i 'def\\s+parse_' --in patch --model 'anthropic/*'",
        ],
    ),
    (
        "export create",
        &[
            "coffer export create attempt-17 partner-policy.json out/attempt-17",
            "# with a report for a reviewer, and $OPENAI_API_KEY's value scrubbed",
            "coffer export create attempt-17 partner-policy.json out/a17 --report a17.html --redact-env OPENAI_API_KEY",
            "# for a recipient who checks it with the peer evidence system (EBO)",
            "coffer export create attempt-17 partner-policy.json out/a17-ebo --compat ebo",
        ],
    ),
    (
        "export verify",
        &[
            "coffer export verify out/attempt-17",
            "coffer export verify out/attempt-17 partner-policy.json",
        ],
    ),
    ("export pack", &["coffer export pack out/attempt-17 attempt-17.tar.zst"]),
    (
        "export view",
        &["# what a partner received, to read in a browser", "coffer export view out/attempt-17 -o attempt-17.html"],
    ),
    ("export unpack", &["coffer export unpack attempt-17.tar.zst unpacked-17"]),
    ("export ls", &["coffer export ls", "coffer export ls --source attempt-17"]),
    (
        "scan",
        &[
            "coffer scan session.jsonl notes/",
            "coffer scan --policy partner-policy.json out/attempt-17",
            "coffer scan --format sarif src/ > coffer.sarif",
        ],
    ),
    (
        "completions",
        &["coffer completions bash > ~/.local/share/bash-completion/completions/coffer"],
    ),
    ("man", &["coffer man > coffer.1"]),
];

/// The everyday round trip, for `coffer --help` and the man page.
pub const TOUR: &[&str] = &[
    "coffer init",
    "coffer bundle ingest runs/attempt-17",
    "coffer bundle ls --since 7d",
    "coffer export create attempt-17 partner-policy.json out/attempt-17 --report a17.html",
    "coffer export verify out/attempt-17",
    "coffer fsck",
];

/// The help text of a command's examples.
fn text(lines: &[&str]) -> String {
    let mut s = String::from("Examples:\n");
    for l in lines {
        s.push_str("  ");
        s.push_str(l);
        s.push('\n');
    }
    s
}

/// The command line, with every command's examples after its help (and
/// so in the man page).
pub fn command() -> Command {
    let mut cmd = Cli::command().after_help(text(TOUR));
    for (path, lines) in EXAMPLES {
        cmd = with_examples(cmd, &path.split(' ').collect::<Vec<_>>(), lines);
    }
    cmd
}

fn with_examples(cmd: Command, path: &[&str], lines: &[&str]) -> Command {
    match path {
        [] => cmd.after_help(text(lines)),
        [first, rest @ ..] => cmd.mut_subcommand(*first, |sub| with_examples(sub, rest, lines)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The leaf commands' paths.
    fn leaves(cmd: &Command, prefix: &str, out: &mut Vec<String>) {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let path = format!("{prefix}{}", sub.get_name());
            if sub.has_subcommands() {
                leaves(sub, &format!("{path} "), out);
            } else {
                out.push(path);
            }
        }
    }

    #[test]
    fn every_command_has_examples_and_every_example_parses() {
        let mut all = Vec::new();
        leaves(&Cli::command(), "", &mut all);
        for path in &all {
            assert!(
                EXAMPLES.iter().any(|(p, _)| p == path),
                "no examples for `coffer {path}`"
            );
        }
        for l in TOUR {
            let parsed = Cli::command().try_get_matches_from(l.split_whitespace());
            assert!(parsed.is_ok(), "`{l}` does not parse: {:?}", parsed.err());
        }
        for (path, lines) in EXAMPLES {
            assert!(all.iter().any(|p| p == path), "`{path}` is no command");
            for l in lines.iter().filter(|l| !l.starts_with('#')) {
                // Each coffer command of a shell line: from `coffer` to a
                // pipe, a redirection or `&&`; one of them is the example's.
                let mut commands = Vec::new();
                for part in l.split("&&") {
                    let start = part.find("coffer ").unwrap_or_else(|| panic!("{l}"));
                    let words: Vec<&str> = part[start..]
                        .split_whitespace()
                        .take_while(|w| !matches!(*w, "|" | ">" | "<"))
                        .collect();
                    let parsed = Cli::command().try_get_matches_from(&words);
                    assert!(parsed.is_ok(), "`{l}` does not parse: {:?}", parsed.err());
                    let mut sub = parsed.as_ref().unwrap().subcommand();
                    let mut named = Vec::new();
                    while let Some((name, m)) = sub {
                        named.push(name);
                        sub = m.subcommand();
                    }
                    commands.push(named.join(" "));
                }
                assert!(
                    commands.contains(&path.to_string()),
                    "`{l}` runs another command"
                );
            }
        }
    }

    #[test]
    fn examples_show_in_help() {
        let help = command()
            .find_subcommand_mut("export")
            .unwrap()
            .find_subcommand_mut("create")
            .unwrap()
            .render_help()
            .to_string();
        assert!(
            help.contains("Examples:\n  coffer export create attempt-17"),
            "{help}"
        );
    }
}
