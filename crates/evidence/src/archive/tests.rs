//! The archive reader's cases, built here by hand: the categories of
//! libarchive's and GNU tar's test archives (ustar, GNU and PAX headers,
//! long names, links, sparse files, damaged and truncated archives, gzip
//! and zstd streams of several members and frames), derived, not copied.
use super::*;

const BOTH: &[Compression] = &[Compression::Gzip, Compression::Zstd];

const BIG: ArchiveLimits = ArchiveLimits {
    max_compressed: 1 << 30,
    max_expanded: 1 << 30,
    max_members: 100_000,
};

fn targz(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    build(&mut b);
    let tar_bytes = b.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &tar_bytes).unwrap();
    gz.finish().unwrap()
}

fn file(b: &mut tar::Builder<Vec<u8>>, name: &str, data: &[u8]) {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    // Bypass the builder's own name checks: hostile names are the point.
    let raw = name.as_bytes();
    h.as_old_mut().name[..raw.len()].copy_from_slice(raw);
    h.set_cksum();
    b.append(&h, data).unwrap();
}

fn special(b: &mut tar::Builder<Vec<u8>>, name: &str, et: tar::EntryType, link: &str) {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(et);
    h.set_size(0);
    h.set_mode(0o777);
    h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
    h.set_cksum();
    b.append(&h, &[][..]).unwrap();
}

fn read(bytes: &[u8], limits: ArchiveLimits) -> Result<Vec<Member>, ArchiveError> {
    read_archive(&mut &bytes[..], limits, BOTH, ANY_NAME, &mut |_, r| {
        std::io::copy(r, &mut std::io::sink())
            .map(|_| ())
            .map_err(|e| refuse("io.archive_read", "", e.to_string()))
    })
}

fn code(bytes: &[u8]) -> &'static str {
    read(bytes, BIG).err().map(|e| e.code).unwrap_or("ok")
}

#[test]
fn ordinary_archives_list_their_members() {
    let a = targz(|b| {
        file(b, "README.md", b"hi");
        file(b, "src/main.rs", b"fn main() {}");
    });
    let m = read(&a, BIG).unwrap();
    assert_eq!(
        m.iter().map(|m| m.path.as_str()).collect::<Vec<_>>(),
        ["README.md", "src/main.rs"]
    );
}

#[test]
fn hostile_members_are_refused_with_their_codes() {
    assert_eq!(
        code(&targz(|b| file(b, "../x", b"x"))),
        "validation.archive_path_traversal"
    );
    assert_eq!(
        code(&targz(|b| file(b, "a/../../x", b"x"))),
        "validation.archive_path_traversal"
    );
    assert_eq!(
        code(&targz(|b| file(b, "/etc/passwd", b"x"))),
        "validation.archive_absolute_path"
    );
    assert_eq!(
        code(&targz(|b| file(b, "./a", b"x"))),
        "validation.archive_noncanonical_name"
    );
    assert_eq!(
        code(&targz(|b| file(b, "a//b", b"x"))),
        "validation.archive_noncanonical_name"
    );
    assert_eq!(
        code(&targz(|b| file(b, ".git/config", b"x"))),
        "validation.archive_member_name"
    );
    assert_eq!(
        code(&targz(|b| special(
            b,
            "link",
            tar::EntryType::Symlink,
            "/etc/passwd"
        ))),
        "validation.archive_link"
    );
    assert_eq!(
        code(&targz(|b| {
            file(b, "a", b"x");
            special(b, "hard", tar::EntryType::Link, "a")
        })),
        "validation.archive_link"
    );
    assert_eq!(
        code(&targz(|b| special(b, "fifo", tar::EntryType::Fifo, ""))),
        "validation.archive_special_member"
    );
    assert_eq!(
        code(&targz(|b| special(b, "dev", tar::EntryType::Char, ""))),
        "validation.archive_special_member"
    );
    assert_eq!(
        code(&targz(|b| {
            file(b, "a", b"1");
            file(b, "a", b"2")
        })),
        "validation.archive_duplicate_member"
    );
    assert_eq!(
        code(&targz(|b| {
            file(b, "Readme", b"1");
            file(b, "README", b"2")
        })),
        "validation.archive_case_collision"
    );
    assert_eq!(
        code(&targz(|b| {
            file(b, "a", b"1");
            file(b, "a/b", b"2")
        })),
        "validation.archive_path_conflict"
    );
    // "café" precomposed and decomposed name the same file.
    assert_eq!(
        code(&targz(|b| {
            file(b, "caf\u{e9}", b"1");
            file(b, "cafe\u{301}", b"2")
        })),
        "validation.archive_case_collision"
    );
}

#[test]
fn names_that_alias_on_other_systems_are_refused() {
    for name in [
        ".git.",
        ".git ",
        "src/.GIT./config",
        "GIT~1",
        "git~1/config",
        "PROGR~12.txt",
        "a\u{200B}b",
        "readme\u{202E}txt.md",
        "\u{FEFF}x",
    ] {
        assert_eq!(
            code(&targz(|b| file(b, name, b"x"))),
            "validation.archive_member_name",
            "{name:?}"
        );
    }
    for name in ["CON", "src/nul.txt", "com1", "LPT9.log"] {
        assert_eq!(
            code(&targz(|b| file(b, name, b"x"))),
            "validation.device_name",
            "{name:?}"
        );
    }
    // Ordinary names with dots, tildes and non-ASCII letters pass.
    for name in [
        "a.b.c",
        "backup~",
        "x~y.txt",
        "long-name~12345.txt",
        "caf\u{e9}.md",
    ] {
        assert_eq!(code(&targz(|b| file(b, name, b"x"))), "ok", "{name:?}");
    }
}

#[test]
fn data_after_the_end_of_the_tar_or_the_gzip_stream_is_refused() {
    let good = targz(|b| file(b, "a", b"x"));
    assert_eq!(code(&good), "ok");
    // A second archive concatenated as another gzip member.
    let mut two = good.clone();
    two.extend_from_slice(&targz(|b| file(b, "evil", b"y")));
    assert_eq!(code(&two), "validation.archive_trailing_data");
    // Garbage after the gzip stream.
    let mut junk = good.clone();
    junk.extend_from_slice(b"junk");
    assert_eq!(code(&junk), "validation.archive_trailing_data");
    // A member after the tar end marker, inside the one gzip member.
    let mut tar_bytes = {
        let mut b = tar::Builder::new(Vec::new());
        file(&mut b, "a", b"x");
        b.into_inner().unwrap()
    };
    let mut more = tar::Builder::new(Vec::new());
    file(&mut more, "hidden", b"y");
    tar_bytes.extend_from_slice(&more.into_inner().unwrap());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &tar_bytes).unwrap();
    assert_eq!(
        code(&gz.finish().unwrap()),
        "validation.archive_trailing_data"
    );
}

#[test]
fn member_count_is_limited_at_the_boundary() {
    let a = targz(|b| (0..10).for_each(|i| file(b, &format!("f{i}"), b"x")));
    let at = ArchiveLimits {
        max_members: 10,
        ..BIG
    };
    assert!(read(&a, at).is_ok());
    let under = ArchiveLimits {
        max_members: 9,
        ..BIG
    };
    assert_eq!(read(&a, under).unwrap_err().code, "limit.archive_members");
}

#[test]
fn a_gzip_bomb_stops_at_the_expanded_limit() {
    let zeros = vec![0u8; 64 << 20];
    let a = targz(|b| file(b, "bomb", &zeros));
    assert!(a.len() < 1 << 20, "the bomb is small compressed");
    let limits = ArchiveLimits {
        max_expanded: 1 << 20,
        ..BIG
    };
    let mut seen = 0u64;
    let e = read_archive(&mut &a[..], limits, BOTH, ANY_NAME, &mut |_, r| {
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => seen += n as u64,
                Err(e) => return Err(refuse("io.archive_read", "", e.to_string())),
            }
        }
    })
    .unwrap_err();
    assert_eq!(e.code, "limit.archive_expanded_bytes");
    assert!(seen <= 1 << 20, "stopped at the limit, read {seen}");
}

#[test]
fn compressed_size_is_limited_while_reading() {
    let a = targz(|b| file(b, "x", &vec![7u8; 100_000]));
    let limits = ArchiveLimits {
        max_compressed: a.len() as u64 - 1,
        ..BIG
    };
    assert_eq!(
        read(&a, limits).unwrap_err().code,
        "limit.archive_compressed_bytes"
    );
    let limits = ArchiveLimits {
        max_compressed: a.len() as u64,
        ..BIG
    };
    assert!(read(&a, limits).is_ok());
}

#[test]
fn truncated_gzip_is_corrupt() {
    let a = targz(|b| file(b, "x", &vec![7u8; 100_000]));
    assert_eq!(code(&a[..a.len() / 2]), "validation.archive_corrupt");
    // Cut only the gzip trailer: the tar end marker is intact.
    assert_eq!(code(&a[..a.len() - 4]), "validation.archive_corrupt");
}

/// The raw tar stream `build` makes, end marker included.
fn tar_of(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    build(&mut b);
    b.into_inner().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, bytes).unwrap();
    gz.finish().unwrap()
}

fn zstd_of(bytes: &[u8]) -> Vec<u8> {
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    enc.include_checksum(true).unwrap();
    std::io::Write::write_all(&mut enc, bytes).unwrap();
    enc.finish().unwrap()
}

/// An extension header (`L`, `K`, `x`, `g`, ...) carrying `data`.
fn ext(b: &mut tar::Builder<Vec<u8>>, kind: u8, data: &[u8]) {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::new(kind));
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_path("././@LongLink").unwrap();
    h.set_cksum();
    b.append(&h, data).unwrap();
}

/// One PAX record, `<len> <key>=<value>\n`, its length counting itself.
fn pax(key: &str, value: &str) -> Vec<u8> {
    let body = format!(" {key}={value}\n");
    let mut len = body.len() + 1;
    while format!("{len}").len() + body.len() != len {
        len += 1;
    }
    format!("{len}{body}").into_bytes()
}

#[test]
fn gzip_streams_of_several_members_and_zstd_streams_of_several_frames_are_one_stream() {
    let tar_bytes = tar_of(|b| {
        file(b, "a", &[b'a'; 3000]);
        file(b, "b", b"bee");
    });
    let cut = 1500;
    let mut two_members = gzip(&tar_bytes[..cut]);
    two_members.extend(gzip(&tar_bytes[cut..]));
    assert_eq!(code(&two_members), "ok");
    let mut two_frames = zstd_of(&tar_bytes[..cut]);
    two_frames.extend(zstd_of(&tar_bytes[cut..]));
    assert_eq!(code(&two_frames), "ok");
    // Skippable frames (magic 0x184D2A5?) first and between frames.
    let skippable = |n: u8| {
        let mut f = vec![0x50 | n, 0x2a, 0x4d, 0x18, 4, 0, 0, 0];
        f.extend(b"skip");
        f
    };
    let mut skipping = skippable(0);
    skipping.extend(zstd_of(&tar_bytes[..cut]));
    skipping.extend(skippable(15));
    skipping.extend(zstd_of(&tar_bytes[cut..]));
    assert_eq!(code(&skipping), "ok");
    let members = read(&skipping, BIG).unwrap();
    assert_eq!(members.len(), 2);
    // Only the formats the caller takes: a packet's fixture is gzip.
    let e = read_archive(
        &mut &skipping[..],
        BIG,
        &[Compression::Gzip],
        ANY_NAME,
        &mut |_, _| Ok(()),
    );
    assert_eq!(e.unwrap_err().code, "validation.archive_format");
    assert_eq!(code(&tar_bytes), "validation.archive_format");
    assert_eq!(code(b""), "validation.archive_format");
}

#[test]
fn every_gzip_and_zstd_integrity_check_is_read_to_the_end() {
    let tar_bytes = tar_of(|b| file(b, "a", &[b'a'; 3000]));
    let gz = gzip(&tar_bytes);
    let n = gz.len();
    let mut bad_crc = gz.clone();
    bad_crc[n - 8] ^= 1;
    assert_eq!(code(&bad_crc), "validation.archive_corrupt");
    let mut bad_isize = gz.clone();
    bad_isize[n - 2] ^= 1;
    assert_eq!(code(&bad_isize), "validation.archive_corrupt");
    assert_eq!(code(&gz[..n - 8]), "validation.archive_corrupt");
    let mut junk_after = gz.clone();
    junk_after.extend(b"\0\0junk");
    assert_eq!(code(&junk_after), "validation.archive_trailing_data");

    let zs = zstd_of(&tar_bytes);
    let m = zs.len();
    assert_eq!(code(&zs), "ok");
    assert_eq!(code(&zs[..m - 3]), "validation.archive_corrupt");
    let mut bad_sum = zs.clone();
    bad_sum[m - 1] ^= 1;
    assert_eq!(code(&bad_sum), "validation.archive_corrupt");
    let mut after = zs.clone();
    after.extend(b"trailing");
    assert_eq!(code(&after), "validation.archive_trailing_data");
}

#[test]
fn the_tar_end_marker_is_two_zero_blocks_and_only_zeros_follow_it() {
    let whole = tar_of(|b| file(b, "a", b"x"));
    let members_only = &whole[..whole.len() - 1024];
    assert_eq!(code(&gzip(members_only)), "validation.archive_corrupt");
    let lone = &whole[..whole.len() - 512];
    assert_eq!(code(&gzip(lone)), "validation.archive_corrupt");
    let mut padded = whole.clone();
    padded.extend(vec![0u8; 8192]);
    assert_eq!(code(&gzip(&padded)), "ok");
    let mut garbage = whole.clone();
    garbage.extend(b"garbage");
    assert_eq!(code(&gzip(&garbage)), "validation.archive_trailing_data");
    // An empty archive is its end marker alone.
    assert_eq!(code(&gzip(&[0u8; 1024])), "ok");
    assert_eq!(code(&gzip(&[])), "validation.archive_corrupt");
}

#[test]
fn a_member_cut_short_is_corrupt_never_a_shorter_file() {
    let whole = tar_of(|b| file(b, "a", &[7u8; 4000]));
    let cut = gzip(&whole[..512 + 1000]);
    let mut got = Vec::new();
    let e = read_archive(&mut &cut[..], BIG, BOTH, ANY_NAME, &mut |_, r| {
        r.read_to_end(&mut got)
            .map(|_| ())
            .map_err(|e| refuse("io.archive_read", "", e.to_string()))
    })
    .unwrap_err();
    assert_eq!(e.code, "validation.archive_corrupt", "{e:?}");
    // A header cut in the middle, too.
    assert_eq!(code(&gzip(&whole[..300])), "validation.archive_corrupt");
}

#[test]
fn long_names_and_pax_headers_are_read_within_their_bounds() {
    // GNU long names, as GNU tar writes them, and a ustar prefix.
    let deep = format!("{}/file.txt", ["segment"; 40].join("/"));
    let a = targz(|b| {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(4);
        b.append_data(&mut h, &deep, &b"deep"[..]).unwrap();
        let mut u = tar::Header::new_ustar();
        u.set_mode(0o644);
        u.set_size(2);
        u.set_path(format!("{}/short", "p".repeat(120))).unwrap();
        u.set_cksum();
        b.append(&u, &b"ok"[..]).unwrap();
    });
    let m = read(&a, BIG).unwrap();
    assert_eq!(m[0].path, deep);
    assert_eq!(m[1].path, format!("{}/short", "p".repeat(120)));
    // A PAX path overrides the header's name.
    let a = targz(|b| {
        ext(
            b,
            b'x',
            &[pax("mtime", "1.5"), pax("path", "from/pax.txt")].concat(),
        );
        file(b, "header-name", b"x");
    });
    assert_eq!(read(&a, BIG).unwrap()[0].path, "from/pax.txt");

    // Over the bounds: refused before the name is read, whatever its size.
    let huge = vec![b'a'; 100 << 20];
    let a = targz(|b| {
        ext(b, b'L', &huge);
        file(b, "x", b"x");
    });
    assert!(a.len() < 1 << 20);
    assert_eq!(code(&a), "limit.archive_member_name");
    for (kind, data) in [
        (b'K', vec![b'k'; 5000]),
        (b'x', vec![b'1'; 70_000]),
        (b'g', vec![b'1'; 70_000]),
        (b'x', pax("path", &"n".repeat(5000))),
    ] {
        let a = targz(|b| {
            ext(b, kind, &data);
            file(b, "x", b"x");
        });
        assert_eq!(code(&a), "limit.archive_member_name", "{}", kind as char);
    }
    // A long name or PAX path is still checked as a name.
    let a = targz(|b| {
        ext(b, b'L', b"../escape\0");
        file(b, "x", b"x");
    });
    assert_eq!(code(&a), "validation.archive_path_traversal");
    let a = targz(|b| {
        ext(b, b'x', &pax("path", "/etc/passwd"));
        file(b, "x", b"x");
    });
    assert_eq!(code(&a), "validation.archive_absolute_path");
}

#[test]
fn malformed_or_dangling_extension_headers_are_corrupt() {
    for data in [&b"garbage"[..], b"99 path=x\n", b"5 a=b\n"] {
        let a = targz(|b| {
            ext(b, b'x', data);
            file(b, "x", b"x");
        });
        assert_eq!(code(&a), "validation.archive_corrupt", "{data:?}");
    }
    let a = targz(|b| ext(b, b'L', b"orphan-name\0"));
    assert_eq!(code(&a), "validation.archive_corrupt");
    let a = targz(|b| {
        ext(b, b'x', &pax("size", "5"));
        file(b, "x", b"x");
    });
    assert_eq!(code(&a), "validation.archive_corrupt");
    // A global header is bounded and otherwise ignored.
    let a = targz(|b| {
        ext(b, b'g', &pax("comment", "made by hand"));
        file(b, "x", b"x");
    });
    assert_eq!(code(&a), "ok");
}

#[test]
fn sparse_members_volume_labels_and_appledouble_files_are_refused() {
    let a = targz(|b| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::GNUSparse);
        h.set_size(0);
        h.set_path("sparse").unwrap();
        h.set_cksum();
        b.append(&h, &[][..]).unwrap();
    });
    assert_eq!(code(&a), "validation.archive_member_type");
    let a = targz(|b| {
        ext(b, b'x', &pax("GNU.sparse.map", "0,10"));
        file(b, "x", b"x");
    });
    assert_eq!(code(&a), "validation.archive_member_type");
    let a = targz(|b| ext(b, b'V', b""));
    assert_eq!(code(&a), "validation.archive_member_type");
    for name in ["._README", "src/._main.rs"] {
        assert_eq!(
            code(&targz(|b| file(b, name, b"x"))),
            "validation.archive_member_name",
            "{name}"
        );
    }
}

#[test]
fn a_file_and_a_directory_of_one_name_clash_in_either_order() {
    for build in [
        (|b: &mut tar::Builder<Vec<u8>>| {
            file(b, "a/b", b"1");
            file(b, "a", b"2")
        }) as fn(&mut tar::Builder<Vec<u8>>),
        |b| {
            file(b, "a", b"1");
            file(b, "a/b/c", b"2")
        },
    ] {
        assert_eq!(code(&targz(build)), "validation.archive_path_conflict");
    }
    // A directory member and files below it are fine.
    let a = targz(|b| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_size(0);
        h.set_mode(0o755);
        h.set_path("dir/").unwrap();
        h.set_cksum();
        b.append(&h, &[][..]).unwrap();
        file(b, "dir/f", b"1");
    });
    assert_eq!(code(&a), "ok");
}
