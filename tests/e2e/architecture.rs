//! The shape of the code, checked on its sources: no module of a crate
//! imports another that (directly or through others) imports it back, and
//! the CAS crate names nothing of the evidence layers above it.

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
    for src in ["store/src", "store/evidence/src", "export/src", "cli/src"] {
        let mods = modules(&repo.join(src));
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

#[test]
fn the_cas_names_nothing_of_the_layers_above() {
    let repo = crate::bundles::repo();
    let manifest = std::fs::read_to_string(repo.join("store/Cargo.toml")).unwrap();
    assert!(!manifest.contains("coffer-evidence") && !manifest.contains("coffer-export"));
    for (m, code) in modules(&repo.join("store/src")) {
        for word in [
            "coffer_evidence",
            "coffer_export",
            "bundle_artifacts",
            "BundleRow",
        ] {
            assert!(!code.contains(word), "store/src {m} names {word}");
        }
    }
}

/// The layers above the CAS reach their catalog tables through
/// `coffer_store::rows`; the database engine stays a CAS detail.
#[test]
fn no_layer_above_the_cas_names_the_database_engine() {
    let repo = crate::bundles::repo();
    for (krate, src) in [
        ("store/evidence", "store/evidence/src"),
        ("export", "export/src"),
        ("cli", "cli/src"),
    ] {
        let manifest = std::fs::read_to_string(repo.join(krate).join("Cargo.toml")).unwrap();
        let deps = manifest
            .split("[dependencies]")
            .nth(1)
            .and_then(|rest| rest.split("\n[").next())
            .unwrap();
        assert!(!deps.contains("rusqlite"), "{krate} depends on rusqlite");
        for (m, code) in modules(&repo.join(src)) {
            let code = code.split("#[cfg(test)]").next().unwrap();
            assert!(!code.contains("rusqlite"), "{src} {m} names rusqlite");
        }
    }
}
