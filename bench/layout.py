#!/usr/bin/env python3
"""What the store's on-disk layout alone costs as it grows: no catalog,
no compression, no hashing.

Builds the format-1 layout (docs/FORMAT.md), objects/sha256/<2hex>/<64hex>, holding ROWS
files (default 1,000,000) of 2 KiB, and an empty copy of it. Then times
the filesystem side of a put of 10,000 new objects, as coffer does it:
each object written to an O_EXCL temp in tmp/, one syncfs, each temp
renamed into its shard with renameat2(RENAME_NOREPLACE), each touched
shard directory fsynced. ROUNDS rounds (default 5), the large layout and
the fresh one in turn; medians. The difference is growth no catalog schema can remove; set
against a fresh store's put of the same 10,000 files (`bench/scale.sh`
prints it) it bounds the rate a put at ROWS objects can reach.

  python3 bench/layout.py                 # 1M objects
  ROWS=100000 python3 bench/layout.py     # quicker
  KEEP=1 python3 bench/layout.py          # keep the layouts (target/bench/layout)
  PAUSE=30 ROUNDS=5                        # the defaults: seconds after the fill, rounds
"""
import ctypes
import hashlib
import os
import shutil
import statistics
import sys
import time

ROWS = int(os.environ.get("ROWS", "1000000"))
BATCH = 10_000
BLOB = bytes(range(256)) * 8  # 2 KiB; the bytes do not matter here
RENAME_NOREPLACE = 1
LIBC = ctypes.CDLL(None, use_errno=True)


def check(rc, what):
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def digest(k):
    return hashlib.sha256(b"layout %d" % k).hexdigest()


class Layout:
    def __init__(self, root):
        self.root, self.k = root, 0
        os.makedirs(os.path.join(root, "tmp"), exist_ok=True)
        self.shards = {}
        for i in range(256):
            d = os.path.join(root, "objects", "sha256", f"{i:02x}")
            os.makedirs(d, exist_ok=True)
            self.shards[f"{i:02x}"] = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        self.tmp = os.open(os.path.join(root, "tmp"), os.O_RDONLY | os.O_DIRECTORY)

    def fill(self, rows):
        """Writes objects straight into their shards (how they got there
        does not matter to the directories)."""
        while self.k < rows:
            d = digest(self.k)
            self.k += 1
            fd = os.open(d[2:], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444, dir_fd=self.shards[d[:2]])
            os.write(fd, BLOB)
            os.close(fd)
        os.sync()

    def put(self):
        """One batch of BATCH new objects, the way a put publishes them."""
        digests = [digest(self.k + i) for i in range(BATCH)]
        self.k += BATCH
        t = time.perf_counter()
        for i, d in enumerate(digests):
            fd = os.open(f"obj.{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444,
                         dir_fd=self.tmp)
            os.write(fd, BLOB)
            os.close(fd)
        check(LIBC.syncfs(self.tmp), "syncfs")
        for i, d in enumerate(digests):
            check(LIBC.renameat2(self.tmp, f"obj.{i}".encode(), self.shards[d[:2]], d[2:].encode(),
                                 RENAME_NOREPLACE), "renameat2")
        for fd in {self.shards[d[:2]] for d in digests}:
            os.fsync(fd)
        return time.perf_counter() - t


def main():
    base = os.path.join(os.environ.get("BENCH_DIR", os.path.join(os.path.dirname(__file__), "..", "target", "bench")), "layout")
    shutil.rmtree(base, ignore_errors=True)
    big, fresh = Layout(os.path.join(base, "big")), Layout(os.path.join(base, "fresh"))
    t = time.perf_counter()
    big.fill(ROWS)
    print(f"filled {ROWS} objects in {time.perf_counter() - t:.0f} s", flush=True)
    time.sleep(int(os.environ.get("PAUSE", "30")))  # file creation is slow for a while after mass writes
    fresh.k = 10 * ROWS  # other names than big's
    rounds = [(fresh.put(), big.put()) for _ in range(int(os.environ.get("ROUNDS", "5")))]
    for f, b in rounds:
        print(f"10,000 objects: fresh {f:.3f} s, at {ROWS // 1000}k {b:.3f} s (+{b - f:.3f} s)")
    f, b = statistics.median(r[0] for r in rounds), statistics.median(r[1] for r in rounds)
    print(f"median: fresh {f:.3f} s, at {ROWS // 1000}k {b:.3f} s: the layout alone adds {b - f:.3f} s per 10,000 objects")
    if not os.environ.get("KEEP"):
        shutil.rmtree(base)


if __name__ == "__main__":
    sys.exit(main())
