//! The shape of the code, checked on its sources: the crates are layers
//! (base, store, evidence, export, cli, each under `crates/`) and none names
//! one above it; no module of a crate imports another that (directly or
//! through others) imports it back; the CAS names nothing of the evidence
//! domain.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`bundle::ingest`) of each source file of a crate's `src/`.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(src).sort_by_file_name() {
        let e = e.unwrap();
        let rel = e
            .path()
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let Some(stem) = rel.strip_suffix(".rs") else {
            continue;
        };
        let module = stem.strip_suffix("/mod").unwrap_or(stem).replace('/', "::");
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap();
        // Unit tests may reach anywhere; comments are not imports.
        let text = text.split("#[cfg(test)]").next().unwrap();
        let code: String = text
            .lines()
            .map(|l| l.split("//").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        out.insert(module, code);
    }
    out
}

/// The longest module that `path` (`a::b::Item`) names.
fn resolve<'a>(mods: &'a BTreeMap<String, String>, path: &str) -> Option<&'a String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .find_map(|n| mods.get_key_value(&parts[..n].join("::")).map(|(k, _)| k))
}

/// The paths a use tree names: `a::{b, c::{d, e}}` is `a::b`, `a::c::d`
/// and `a::c::e`.
fn use_tree(prefix: &str, tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let name = tree.split_whitespace().next().unwrap_or("");
        return vec![format!("{prefix}{name}")];
    };
    let (head, body) = (
        &tree[..open],
        &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())],
    );
    let prefix = format!("{prefix}{head}");
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&body[start..]);
    items
        .into_iter()
        .filter(|it| !it.trim().is_empty())
        .flat_map(|it| use_tree(&prefix, it))
        .collect()
}

/// Edges between modules: `crate::` paths in code and `use crate::…` trees.
/// A module's own submodules and its parents are not edges (declaring and
/// re-exporting children is how Rust modules nest).
fn imports(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let path = regex::Regex::new(r"\bcrate::((?:[a-z_0-9]+::)*[a-z_0-9]+)").unwrap();
    let uses = regex::Regex::new(r"\buse crate::([^;]*);").unwrap();
    let mut g = BTreeMap::new();
    for (m, code) in mods {
        let mut named: Vec<String> = path.captures_iter(code).map(|c| c[1].to_string()).collect();
        for u in uses.captures_iter(code) {
            named.extend(use_tree("", &u[1]));
        }
        let mut deps = BTreeSet::new();
        for p in named {
            if let Some(d) = resolve(mods, &p) {
                let nested = d.starts_with(&format!("{m}::")) || m.starts_with(&format!("{d}::"));
                if d != m && !nested {
                    deps.insert(d.clone());
                }
            }
        }
        g.insert(m.clone(), deps);
    }
    g
}

/// Modules that lie on a cycle, with the cycle's members.
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(v) = todo.pop() {
            for w in &g[&v] {
                if seen.insert(w.clone()) {
                    todo.push(w.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> = g.keys().map(|m| (m, reach(m))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for (m, r) in &reached {
        if !r.contains(*m) {
            continue;
        }
        let comp: BTreeSet<String> = r
            .iter()
            .filter(|o| reached[o].contains(*m))
            .cloned()
            .collect();
        if !out.contains(&comp) {
            out.push(comp);
        }
    }
    out
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let repo = crate::bundles::repo();
    for (krate, _) in LAYERS {
        let src = format!("crates/{krate}/src");
        let mods = modules(&repo.join(&src));
        assert!(mods.len() > 3, "{src}: no modules found");
        let found = cycles(&imports(&mods));
        assert!(found.is_empty(), "{src}: import cycles {found:?}");
    }
}

#[test]
fn the_cycle_check_finds_a_planted_cycle() {
    let mods: BTreeMap<String, String> = [
        ("a", "use crate::b::Thing;"),
        ("b", "use crate::{c::{f, g}, d};"),
        ("c", "fn g() { crate::a::h() }"),
        ("d", ""),
        ("e::x", "use crate::e::y;"),
        ("e::y", "use crate::d;"),
    ]
    .into_iter()
    .map(|(m, c)| (m.to_string(), c.to_string()))
    .collect();
    let found = cycles(&imports(&mods));
    let abc: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    assert_eq!(found, vec![abc]);
}

/// The crates, lowest first, with the name code uses for each.
const LAYERS: [(&str, &str); 5] = [
    ("base", "coffer_base"),
    ("store", "coffer_store"),
    ("evidence", "coffer_evidence"),
    ("export", "coffer_export"),
    ("cli", "coffer_cli"),
];

/// The `[dependencies]` table of a crate's manifest.
fn dependencies(krate: &str) -> String {
    let manifest = crate::bundles::repo()
        .join("crates")
        .join(krate)
        .join("Cargo.toml");
    let manifest = std::fs::read_to_string(manifest).unwrap();
    manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .unwrap()
        .to_string()
}

#[test]
fn no_crate_names_a_layer_above_it() {
    let repo = crate::bundles::repo();
    for (i, (krate, _)) in LAYERS.iter().enumerate() {
        let deps = dependencies(krate);
        for (above, ident) in &LAYERS[i + 1..] {
            assert!(
                !deps.contains(&format!("coffer-{above}")),
                "crates/{krate} depends on coffer-{above}"
            );
            for (m, code) in modules(&repo.join("crates").join(krate).join("src")) {
                assert!(!code.contains(ident), "crates/{krate} {m} names {ident}");
            }
        }
        // Each layer but the lowest stands on the one right below it.
        if i > 0 {
            let below = LAYERS[i - 1].0;
            assert!(
                deps.contains(&format!("coffer-{below}")),
                "crates/{krate} skips coffer-{below}"
            );
        }
    }
}

#[test]
fn the_cas_names_nothing_of_the_evidence_domain() {
    let repo = crate::bundles::repo();
    for krate in ["base", "store"] {
        for (m, code) in modules(&repo.join("crates").join(krate).join("src")) {
            for word in [
                "bundle_artifacts",
                "BundleRow",
                "sharingClass",
                "session.jsonl",
            ] {
                assert!(!code.contains(word), "crates/{krate} {m} names {word}");
            }
        }
    }
}

/// The layers above the CAS reach their catalog tables through
/// `coffer_store::rows`; the database engine stays a CAS detail.
#[test]
fn no_layer_above_the_cas_names_the_database_engine() {
    let repo = crate::bundles::repo();
    for krate in ["base", "evidence", "export", "cli"] {
        let deps = dependencies(krate);
        assert!(!deps.contains("rusqlite"), "{krate} depends on rusqlite");
        let src = format!("crates/{krate}/src");
        for (m, code) in modules(&repo.join(&src)) {
            let code = code.split("#[cfg(test)]").next().unwrap();
            assert!(!code.contains("rusqlite"), "{src} {m} names rusqlite");
        }
    }
}

/// Issue codes have one home, `coffer_base::codes`: no other non-test
/// source spells one as a string literal. (Tests spell them on purpose:
/// they check the contract as a script sees it.)
#[test]
fn no_source_spells_an_issue_code_outside_the_codes_module() {
    let repo = crate::bundles::repo();
    let literal = regex::Regex::new(
        r#""(?:validation|integrity|conflict|policy|limit|io|usage)\.[a-z0-9_]+""#,
    )
    .unwrap();
    let mut found = Vec::new();
    for (krate, _) in LAYERS {
        let src = repo.join("crates").join(krate).join("src");
        for (m, code) in modules(&src) {
            if (krate == "base" && m == "codes") || m.ends_with("tests") {
                continue;
            }
            found.extend(
                literal
                    .find_iter(&code)
                    .map(|l| format!("crates/{krate} {m}: {}", l.as_str())),
            );
        }
    }
    assert!(
        found.is_empty(),
        "codes spelled outside coffer_base::codes: {found:?}"
    );
    // The check reads what it should: a planted literal is found.
    assert!(literal.is_match(r#"Issue::about("validation.schema", None, "x")"#));
}

/// The evidence domain raises its own refusals (`EvidenceError`), not the
/// store's: above the CAS, only the one place that carries a refusal
/// through the store's transaction names a store conflict.
#[test]
fn no_layer_above_the_cas_raises_a_store_conflict() {
    let repo = crate::bundles::repo();
    let mut found = Vec::new();
    for krate in ["evidence", "export", "cli"] {
        for (m, code) in modules(&repo.join("crates").join(krate).join("src")) {
            let allowed = krate == "evidence" && m == "error";
            if !allowed && code.contains("StoreError::Conflict") {
                found.push(format!("crates/{krate} {m}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "store conflicts raised above the CAS: {found:?}"
    );
}

/// The export's stages (detect, rewrite, gate, publish; docs/ARCHITECTURE.md)
/// only look back: `create` alone knows their order, nothing before the
/// gate names it or what comes after it, and the gate names none of the
/// writer's state (the scrubber, pass 1's collection, the passes' setup).
#[test]
fn the_export_stages_only_look_back_and_the_gate_shares_no_writer_state() {
    let repo = crate::bundles::repo();
    let mods = modules(&repo.join("crates/export/src"));
    for stage in ["detect", "rewrite", "gate", "publish"] {
        assert!(mods.contains_key(stage), "export stage {stage} is missing");
    }
    let g = imports(&mods);
    let in_stage = |m: &str, stage: &str| m == stage || m.starts_with(&format!("{stage}::"));
    let forbidden: &[(&str, &[&str])] = &[
        (
            "detect",
            &["rewrite", "gate", "publish", "create", "passes"],
        ),
        ("rewrite", &["gate", "publish", "create", "passes"]),
        ("gate", &["publish", "create", "passes", "detect::collect"]),
        ("publish", &["create", "passes"]),
    ];
    let mut found = Vec::new();
    for (m, deps) in &g {
        for (stage, banned) in forbidden {
            if !in_stage(m, stage) {
                continue;
            }
            for d in deps {
                // `rewrite` itself is the scrubber; its helper modules
                // (identity, literals, local_paths) find what they replace
                // and are shared on purpose.
                let hit = banned.iter().any(|b| in_stage(d, b))
                    && !(*stage == "detect" && d.starts_with("rewrite::"));
                if hit || (*stage == "gate" && d == "rewrite") {
                    found.push(format!("{m} -> {d}"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "export stage edges that look forward or share writer state: {found:?}"
    );
}
