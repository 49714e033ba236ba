#!/usr/bin/env python3
"""Where a large catalog's put cost comes from, SQLite alone (no files).

Builds the CAS tables of coffer's catalog (objects, roots and
roots_by_digest, as in crates/store/src/catalog.rs) in WAL mode with
synchronous=FULL and a 64 MiB cache (what a coffer writer uses), fills
them with ROWS random digests 10,000 per transaction (one `put` root per
object, named like a path as `coffer put DIR` names them), and times the
next 10,000-row transaction against the same transaction into a fresh
catalog. Variants change one thing each:

  base      the schema as it is
  noroots   objects only (what the roots table and its index cost)
  blob      digests as 32-byte BLOBs instead of 71-character text
  sorted    each batch inserted in digest order
  page1k    page_size 1024 instead of 4096
  onename   every root of a batch under one name (the put's argument),
            not one path per file
  intref    roots refer to objects by an integer id (objects get a
            rowid and a unique digest index) instead of the digest
  noindex   no index of roots by object (the roots table's key only)
  distinct  each batch's paths under a directory of its own (a user
            putting a new run directory), not the same paths again
  packed    issue 42's candidate: objects keyed by (pack, ordinal), their
            digests only in the packs' sorted indexes (not in SQLite), and
            roots appended by rowid with no key over (kind, name, digest)
  unique    with packed: a unique index over the roots' (kind, name,
            digest), which `ON CONFLICT DO NOTHING` needs today

Variants combine with "+" (e.g. blob+noindex).

  python3 bench/catalog.py                  # the first five variants, 500k rows
  ROWS=1000000 python3 bench/catalog.py base blob
"""
import hashlib
import os
import sqlite3
import sys
import tempfile
import time

ROWS = int(os.environ.get("ROWS", "500000"))
BATCH = 10_000


INTREF = """
CREATE TABLE objects (id INTEGER PRIMARY KEY, digest TEXT NOT NULL UNIQUE, size INTEGER NOT NULL,
  stored_size INTEGER NOT NULL, first_seen_ms INTEGER NOT NULL) STRICT;
CREATE TABLE roots (kind TEXT NOT NULL, name TEXT NOT NULL,
  object INTEGER NOT NULL REFERENCES objects (id), created_ms INTEGER NOT NULL,
  PRIMARY KEY (kind, name, object)) STRICT, WITHOUT ROWID;
CREATE INDEX roots_by_object ON roots (object);
"""

PACKED = """
CREATE TABLE objects (pack INTEGER NOT NULL, ordinal INTEGER NOT NULL, size INTEGER NOT NULL,
  stored_size INTEGER NOT NULL, first_seen_ms INTEGER NOT NULL,
  PRIMARY KEY (pack, ordinal)) STRICT, WITHOUT ROWID;
CREATE TABLE roots (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL,
  digest BLOB NOT NULL, created_ms INTEGER NOT NULL) STRICT;
"""


def schema(key):
    return f"""
CREATE TABLE objects (digest {key} PRIMARY KEY, size INTEGER NOT NULL,
  stored_size INTEGER NOT NULL, first_seen_ms INTEGER NOT NULL) STRICT, WITHOUT ROWID;
CREATE TABLE roots (kind TEXT NOT NULL, name TEXT NOT NULL,
  digest {key} NOT NULL REFERENCES objects (digest), created_ms INTEGER NOT NULL,
  PRIMARY KEY (kind, name, digest)) STRICT, WITHOUT ROWID;
CREATE INDEX roots_by_digest ON roots (digest);
"""


class Catalog:
    def __init__(self, path, variant):
        self.variant, self.k = variant, 0
        self.c = sqlite3.connect(path, isolation_level=None)
        self.parts = set(variant.split("+"))
        if "page1k" in self.parts:
            self.c.execute("PRAGMA page_size=1024")
        self.c.execute("PRAGMA journal_mode=WAL")
        self.c.execute("PRAGMA synchronous=FULL")
        self.c.execute("PRAGMA cache_size=-65536")
        if "intref" in self.parts:
            self.c.executescript(INTREF)
        elif "packed" in self.parts:
            self.c.executescript(PACKED)
            if "unique" in self.parts:
                self.c.execute("CREATE UNIQUE INDEX roots_key ON roots (kind, name, digest)")
        else:
            self.c.executescript(schema("BLOB" if "blob" in self.parts else "TEXT"))
        if "noindex" in self.parts:
            self.c.execute("DROP INDEX " + ("roots_by_object" if "intref" in self.parts else "roots_by_digest"))

    def batch(self):
        rows, b = [], self.k // BATCH
        for i in range(BATCH):
            h = hashlib.sha256(b"%d" % self.k)
            self.k += 1
            d = h.digest() if self.parts & {"blob", "packed"} else "sha256:" + h.hexdigest()
            run = f"in-{b}" if "distinct" in self.parts else "in"
            name = f"/home/user/runs/{run}/{i % 100:02d}/{i}"
            rows.append((d, f"/home/user/runs/in#{b}" if "onename" in self.parts else name))
        if "sorted" in self.parts:
            rows.sort()
        t = time.perf_counter()
        self.c.execute("BEGIN IMMEDIATE")
        for i, (d, name) in enumerate(rows):
            if "packed" in self.parts:
                self.c.execute("INSERT INTO objects VALUES (?,?,?,?,?)", (self.k // BATCH, i, 2000, 2100, self.k))
                self.c.execute("INSERT INTO roots (kind, name, digest, created_ms) VALUES ('put',?,?,?)",
                               (name, d, self.k))
                continue
            if "intref" in self.parts:
                cur = self.c.execute("INSERT INTO objects (digest, size, stored_size, first_seen_ms) "
                                     "VALUES (?,?,?,?)", (d, 2000, 2100, self.k))
                self.c.execute("INSERT INTO roots VALUES ('put',?,?,?)", (name, cur.lastrowid, self.k))
                continue
            self.c.execute("INSERT INTO objects VALUES (?,?,?,?)", (d, 2000, 2100, self.k))
            if "noroots" not in self.parts:
                self.c.execute("INSERT INTO roots VALUES ('put',?,?,?)", (name, d, self.k))
        self.c.execute("COMMIT")
        return time.perf_counter() - t


def run(variant, tmp):
    fresh = Catalog(os.path.join(tmp, f"fresh-{variant}.sqlite"), variant)
    big = Catalog(os.path.join(tmp, f"big-{variant}.sqlite"), variant)
    while big.k < ROWS:
        big.batch()
    fresh_s, big_s = [], []
    for _ in range(3):  # interleaved: the disk's mood hits both alike
        fresh_s.append(fresh.batch())
        big_s.append(big.batch())
    f, b = sorted(fresh_s)[1], sorted(big_s)[1]
    mib = os.path.getsize(os.path.join(tmp, f"big-{variant}.sqlite")) >> 20
    print(f"{variant:8} {BATCH} rows: fresh {f:.3f} s, at {ROWS // 1000}k {b:.3f} s "
          f"({f / b:.2f}x), catalog {mib} MiB", flush=True)


def main():
    variants = sys.argv[1:] or ["base", "noroots", "blob", "sorted", "page1k"]
    with tempfile.TemporaryDirectory(prefix="coffer-catalog-") as tmp:
        for v in variants:
            run(v, tmp)


if __name__ == "__main__":
    main()
