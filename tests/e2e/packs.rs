//! Store format 2: packs, read as FORMAT.md says another tool could.

use std::path::Path;

use crate::support::{sha256, Env};

/// One entry of an index, decoded by hand from FORMAT.md.
struct IdxEntry {
    digest: String,
    offset: usize,
    stored: usize,
    size: usize,
}

fn be(b: &[u8]) -> usize {
    be_n(&b[..8])
}

/// Decodes `packs/<hex>.idx` with sha2 and the layout in FORMAT.md.
fn read_index(path: &Path) -> (String, usize, Vec<IdxEntry>) {
    use sha2::Digest;
    let b = std::fs::read(path).unwrap();
    // Compact entries (32-bit numbers) are what a build writes for packs
    // of small objects; the wide form is read too (FORMAT.md).
    let width = match &b[..8] {
        b"CFPKIDX\x03" => 4,
        b"CFPKIDX\x02" => 8,
        m => panic!("magic {m:?}"),
    };
    assert_eq!(width, 4, "a pack of small objects has compact entries");
    let entry = 32 + 3 * width;
    let n = be(&b[8..]);
    assert_eq!(b.len(), 56 + entry * n + 32);
    let body = b.len() - 32;
    assert_eq!(
        &sha2::Sha256::digest(&b[..body])[..],
        &b[body..],
        "index checksum"
    );
    let pack = hex::encode(&b[16..48]);
    let num = |e: &[u8], i: usize| be_n(&e[32 + i * width..32 + (i + 1) * width]);
    let entries = (0..n)
        .map(|i| {
            let e = &b[56 + entry * i..];
            IdxEntry {
                digest: format!("sha256:{}", hex::encode(&e[..32])),
                offset: num(e, 0),
                stored: num(e, 1),
                size: num(e, 2),
            }
        })
        .collect();
    (pack, be(&b[48..]), entries)
}

/// A big-endian number of any width up to eight bytes.
fn be_n(b: &[u8]) -> usize {
    b.iter().fold(0usize, |n, x| (n << 8) | usize::from(*x))
}

fn packs(env: &Env) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(env.store.join("packs"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn format_version(env: &Env) -> u64 {
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(env.store.join("STORE-FORMAT")).unwrap()).unwrap();
    v["version"].as_u64().unwrap()
}

/// `n` small text files under `dir`, and their bytes.
fn small_files(env: &Env, dir: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let data = format!("line {i} of {dir}\n")
                .repeat(i % 40 + 1)
                .into_bytes();
            env.write(&format!("{dir}/f{i:04}.txt"), &data);
            data
        })
        .collect()
}

/// Runs `coffer --json --store STORE ARGS` in the env's directory.
fn at(env: &Env, store: &str, args: &[&str]) -> (i32, serde_json::Value) {
    let out = std::process::Command::new(crate::support::bin())
        .current_dir(env.dir.path())
        .env_remove("COFFER_STORE")
        .args(["--json", "--store", store])
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_default();
    (out.status.code().unwrap_or(-1), v)
}

fn fsck_clean(env: &Env) -> serde_json::Value {
    let (code, v) = env.json(&["fsck", "--read-data"]);
    assert_eq!(code, 0, "{v}");
    v
}

#[test]
fn many_small_files_go_into_one_pack_that_a_plain_decoder_reads() {
    let env = Env::new();
    let files = small_files(&env, "many", 150);
    let (code, v) = env.json(&["put", "many"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(format_version(&env), 2, "the first pack marks the store");
    let names = packs(&env);
    assert_eq!(names.len(), 2, "one pack and its index: {names:?}");
    let (pack, size, entries) = read_index(&env.store.join("packs").join(&names[0]));
    assert_eq!(names[1], format!("{pack}.pack"));
    let bytes = std::fs::read(env.store.join("packs").join(&names[1])).unwrap();
    use sha2::Digest;
    assert_eq!(
        hex::encode(sha2::Sha256::digest(&bytes)),
        pack,
        "named by its digest"
    );
    assert_eq!(bytes.len(), size);
    assert_eq!(entries.len(), files.len());
    // The frames tile the pack: no header, nothing between them.
    assert_eq!(entries.iter().map(|e| e.stored).sum::<usize>(), size);
    for e in &entries {
        let raw = zstd::stream::decode_all(&bytes[e.offset..e.offset + e.stored]).unwrap();
        assert_eq!((sha256(&raw), raw.len()), (e.digest.clone(), e.size));
        assert!(!env.object_file(&e.digest).exists(), "packed, not loose");
    }
    // The whole pack is a valid zstd stream of the files' bytes.
    let all = zstd::stream::decode_all(&bytes[..]).unwrap();
    assert_eq!(all.len(), files.iter().map(Vec::len).sum::<usize>());
    for (i, data) in files.iter().enumerate() {
        let out = format!("back{i}");
        let (code, v) = env.json(&["get", &sha256(data), "-o", &out]);
        assert_eq!(code, 0, "{v}");
        assert_eq!(&std::fs::read(env.path(&out)).unwrap(), data);
    }
    let v = fsck_clean(&env);
    assert_eq!(v["result"]["verified"], files.len() as u64 + 1, "{v}");
    assert_eq!(v["result"]["packs"], 1);
}

#[test]
fn a_few_files_stay_loose_and_the_store_stays_format_1() {
    let env = Env::new();
    let files = small_files(&env, "few", 5);
    assert_eq!(env.json(&["put", "few"]).0, 0);
    assert_eq!(format_version(&env), 1);
    assert!(packs(&env).is_empty());
    for data in &files {
        assert!(env.object_file(&sha256(data)).exists());
    }
}

#[test]
fn repack_converts_a_format_1_store_in_place() {
    let env = Env::new();
    let mut files = small_files(&env, "a", 40);
    files.extend(small_files(&env, "b", 30));
    assert_eq!(env.json(&["put", "a"]).0, 0);
    assert_eq!(env.json(&["put", "b"]).0, 0);
    assert_eq!(format_version(&env), 1);
    let (code, v) = env.json(&["repack"]);
    assert_eq!(code, 0, "{v}");
    // Every object, records included: 70 files and two records.
    assert_eq!(v["result"]["objectsPacked"], 72, "{v}");
    assert_eq!(format_version(&env), 2);
    for data in &files {
        let d = sha256(data);
        assert!(!env.object_file(&d).exists(), "the loose file is gone");
        assert_eq!(env.json(&["has", &d]).0, 0);
    }
    fsck_clean(&env);
    // Nothing loose is left to pack.
    let (_, v) = env.json(&["repack"]);
    assert_eq!(v["result"]["objectsPacked"], 0);
    // The catalog rebuilt from the backend alone finds packed objects.
    std::fs::remove_file(env.store.join("catalog.sqlite")).unwrap();
    let _ = std::fs::remove_file(env.store.join("catalog.sqlite-wal"));
    let _ = std::fs::remove_file(env.store.join("catalog.sqlite-shm"));
    let (code, v) = env.json(&["catalog", "rebuild"]);
    assert_eq!(code, 0, "{v}");
    let (code, v) = env.json(&["get", &sha256(&files[3]), "-o", "again"]);
    assert_eq!(code, 0, "{v}");
    fsck_clean(&env);
}

#[test]
fn a_damaged_pack_is_refused_and_putting_the_bytes_again_repairs_the_object() {
    let env = Env::new();
    let files = small_files(&env, "many", 120);
    assert_eq!(env.json(&["put", "many"]).0, 0);
    let names = packs(&env);
    let (_, _, entries) = read_index(&env.store.join("packs").join(&names[0]));
    let victim = &entries[7];
    let pack = env.store.join("packs").join(&names[1]);
    let mut bytes = std::fs::read(&pack).unwrap();
    bytes[victim.offset + victim.stored / 2] ^= 0x40;
    let mut perms = std::fs::metadata(&pack).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&pack, perms).unwrap();
    std::fs::write(&pack, &bytes).unwrap();
    let (code, v) = env.json(&["get", &victim.digest, "-o", "bad"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["issues"][0]["code"], "integrity.digest_mismatch", "{v}");
    assert!(!env.path("bad").exists(), "nothing unverified is written");
    let (code, v) = env.json(&["fsck", "--read-data"]);
    assert_eq!(code, 1);
    let found: Vec<&str> = v["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["code"].as_str().unwrap())
        .collect();
    assert!(found.contains(&"integrity.corrupt_pack"), "{v}");
    assert!(found.contains(&"integrity.digest_mismatch"), "{v}");
    // The same bytes put again land loose, and reads prefer them.
    let data = files.iter().find(|f| sha256(f) == victim.digest).unwrap();
    env.write("again", data);
    assert_eq!(env.json(&["put", "again"]).0, 0);
    let (code, v) = env.json(&["get", &victim.digest, "-o", "good"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(&std::fs::read(env.path("good")).unwrap(), data);
}

#[test]
fn mirror_copies_packs_as_they_are() {
    let env = Env::new();
    let files = small_files(&env, "many", 130);
    assert_eq!(env.json(&["put", "many"]).0, 0);
    let dest = env.path("copy");
    let dest = dest.to_str().unwrap();
    assert_eq!(at(&env, dest, &["init"]).0, 0, "init the copy");
    let (code, v) = env.json(&["mirror", dest]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["packsCopied"], 1, "{v}");
    let src: Vec<String> = packs(&env);
    let copied: Vec<String> = {
        let mut v: Vec<String> = std::fs::read_dir(env.path("copy/packs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(src, copied, "the same pack under the same name");
    for data in files.iter().step_by(13) {
        let out = format!("m{}", data.len());
        let (code, v) = at(&env, dest, &["get", &sha256(data), "-o", &out]);
        assert_eq!(code, 0, "{v}");
    }
    let (code, v) = at(&env, dest, &["fsck", "--read-data"]);
    assert_eq!(code, 0, "{v}");
}

/// Files named one by one on the command line (a shell glob) share a
/// batch as a directory's do: one pack, one catalog record, one ref.
#[test]
fn files_named_on_the_command_line_share_one_batch_and_pack() {
    let env = Env::new();
    let mut args = vec!["put".to_string()];
    for i in 0..150 {
        let name = format!("f{i:03}.txt");
        env.write(&name, format!("file {i} of a glob\n").as_bytes());
        args.push(env.path(&name).to_string_lossy().into_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, v) = env.json(&args);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["files"].as_array().unwrap().len(), 150);
    assert_eq!(packs(&env).len(), 2, "one pack and its index");
    let records = std::fs::read_dir(env.store.join("refs/records"))
        .unwrap()
        .count();
    assert_eq!(records, 1, "one batch, one record");
    let (code, v) = env.json(&["fsck", "--read-data"]);
    assert_eq!(code, 0, "{v}");
}
