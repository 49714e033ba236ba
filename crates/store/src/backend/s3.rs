//! An S3-compatible bucket as a backend, through the `object_store` crate.
//!
//! - Puts are conditional (`PutMode::Create`, sent as `If-None-Match: *`): an
//!   existing key is never replaced and `AlreadyExists` is a dedup hit.
//! - Frames of [`MULTIPART_MIN`] and more go up as multipart uploads after a
//!   `head` finds the key absent (object_store has no conditional multipart
//!   completion). Two writers racing there upload frames of the same content,
//!   and every read re-verifies, so the race cannot serve wrong bytes.
//! - Credentials and region come from the environment (`AWS_*`) only.
//!
//! The store's code is synchronous; this backend owns a small tokio runtime
//! and blocks on it. Several threads may block on it at once, which is how
//! a batch keeps several uploads in flight.

use std::io::{self, Read};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as KeyPath;
use object_store::{
    GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig,
    WriteMultipart,
};

use super::{remote_error, Backend, BackendConfig, Body, Listed, Meta, Put};
use crate::error::{Result, StoreError};
use coffer_base::dir::Dir;

/// Frames at least this large are uploaded in parts.
pub const MULTIPART_MIN: u64 = 8 << 20;
/// Part size of multipart uploads.
const PART_SIZE: usize = 8 << 20;
/// Parts of one upload in flight at once.
const PART_CONCURRENCY: usize = 2;
/// Upload bytes held in memory at once, over all threads: a single put
/// holds its frame, a multipart upload its parts in flight plus the one
/// being filled. Uploads wait for room, so memory stays flat however many
/// threads publish and however large the objects are.
const UPLOAD_BUDGET: u64 = 64 << 20;

/// A counting gate on upload bytes in memory.
#[derive(Debug, Default)]
struct Budget {
    used: std::sync::Mutex<u64>,
    freed: std::sync::Condvar,
}

/// Bytes taken from a [`Budget`], given back when dropped.
struct Held<'a> {
    budget: &'a Budget,
    n: u64,
}

impl Budget {
    /// Waits until `n` bytes fit (a request larger than the whole budget
    /// waits until nothing else is held).
    fn take(&self, n: u64) -> Held<'_> {
        let mut used = self.used.lock().expect("budget poisoned");
        while *used > 0 && *used + n > UPLOAD_BUDGET {
            used = self.freed.wait(used).expect("budget poisoned");
        }
        *used += n;
        Held { budget: self, n }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        *self.budget.used.lock().expect("budget poisoned") -= self.n;
        self.budget.freed.notify_all();
    }
}

/// A bucket (and key prefix) holding a store's objects and refs.
#[derive(Debug)]
pub struct S3Backend {
    store: AmazonS3,
    rt: tokio::runtime::Runtime,
    prefix: String,
    location: String,
    budget: Budget,
}

fn meta_of(m: &object_store::ObjectMeta) -> Meta {
    Meta {
        size: m.size,
        modified_ms: m.last_modified.timestamp_millis(),
    }
}

impl S3Backend {
    /// Connects to the bucket `config` names (no request is made yet).
    pub fn open(config: &BackendConfig) -> Result<Self> {
        let BackendConfig::S3 {
            bucket,
            prefix,
            endpoint,
        } = config
        else {
            unreachable!("S3Backend::open takes an S3 configuration");
        };
        let location = config.describe();
        let mut b = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_retry(RetryConfig {
                max_retries: 5,
                retry_timeout: Duration::from_secs(60),
                ..RetryConfig::default()
            });
        if std::env::var_os("AWS_REGION").is_none()
            && std::env::var_os("AWS_DEFAULT_REGION").is_none()
        {
            b = b.with_region("us-east-1");
        }
        if let Some(e) = endpoint {
            b = b
                .with_endpoint(e)
                .with_allow_http(e.starts_with("http://"))
                .with_virtual_hosted_style_request(false);
        }
        let store = b
            .build()
            .map_err(|e| remote_error(&location, "", "configure", e))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("coffer-s3")
            .enable_all()
            .build()
            .map_err(|e| StoreError::io(location.clone(), "start runtime", e))?;
        Ok(S3Backend {
            store,
            rt,
            prefix: prefix.clone(),
            location,
            budget: Budget::default(),
        })
    }

    fn path(&self, key: &str) -> KeyPath {
        if self.prefix.is_empty() {
            KeyPath::from(key)
        } else {
            KeyPath::from(format!("{}/{key}", self.prefix))
        }
    }

    /// The bucket path a listing of `prefix` starts at.
    fn list_base(&self, prefix: &str) -> KeyPath {
        self.path(prefix.trim_end_matches('/'))
    }

    /// A listed object as a store key (the bucket prefix stripped).
    fn listed(&self, m: &object_store::ObjectMeta) -> Option<Listed> {
        let location = m.location.as_ref();
        let key = if self.prefix.is_empty() {
            location
        } else {
            location
                .strip_prefix(self.prefix.as_str())?
                .strip_prefix('/')?
        };
        Some(Listed {
            key: key.to_string(),
            meta: meta_of(m),
            regular: true,
        })
    }

    fn err(&self, key: &str, op: &'static str, e: impl std::fmt::Display) -> StoreError {
        remote_error(&self.location, key, op, e)
    }

    fn put_create(&self, key: &str, payload: PutPayload) -> Result<Put> {
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match self
            .rt
            .block_on(self.store.put_opts(&self.path(key), payload, opts))
        {
            Ok(_) => Ok(Put::Created),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(Put::Existed),
            Err(e) => Err(self.err(key, "put", e)),
        }
    }

    fn put_multipart(&self, key: &str, mut file: std::fs::File) -> Result<Put> {
        if self.head(key)?.is_some() {
            return Ok(Put::Existed);
        }
        let _held = self
            .budget
            .take((PART_SIZE * (PART_CONCURRENCY + 1)) as u64);
        let path = self.path(key);
        self.rt.block_on(async {
            let upload = self
                .store
                .put_multipart(&path)
                .await
                .map_err(|e| self.err(key, "start multipart upload", e))?;
            let mut w = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let _ = w.abort().await;
                        return Err(StoreError::io(key, "read temp", e));
                    }
                };
                if let Err(e) = w.wait_for_capacity(PART_CONCURRENCY).await {
                    let _ = w.abort().await;
                    return Err(self.err(key, "upload part", e));
                }
                w.write(&buf[..n]);
            }
            w.finish()
                .await
                .map_err(|e| self.err(key, "complete multipart upload", e))?;
            Ok(Put::Created)
        })
    }
}

/// A blocking reader over a streamed GET body.
struct StreamBody {
    handle: tokio::runtime::Handle,
    stream: futures::stream::BoxStream<'static, object_store::Result<bytes::Bytes>>,
    chunk: bytes::Bytes,
}

impl Read for StreamBody {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.chunk.is_empty() {
            match self.handle.block_on(self.stream.next()) {
                None => return Ok(0),
                Some(Ok(c)) => self.chunk = c,
                Some(Err(e)) => return Err(io::Error::other(e.to_string())),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk.split_to(n));
        Ok(n)
    }
}

impl Backend for S3Backend {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn shared(&self) -> bool {
        true
    }

    fn publish(&self, key: &str, tmp: &Dir, tmp_name: &str) -> Result<Put> {
        let result = (|| {
            let mut f = tmp
                .open_file(tmp_name)
                .map_err(|e| StoreError::io(tmp.join(tmp_name), "open temp", e))?;
            let len = f
                .metadata()
                .map_err(|e| StoreError::io(tmp.join(tmp_name), "stat", e))?
                .len();
            if len >= MULTIPART_MIN {
                return self.put_multipart(key, f);
            }
            let _held = self.budget.take(len);
            let mut bytes = Vec::with_capacity(len as usize);
            f.read_to_end(&mut bytes)
                .map_err(|e| StoreError::io(tmp.join(tmp_name), "read temp", e))?;
            self.put_create(key, PutPayload::from(bytes))
        })();
        let _ = tmp.remove_file(tmp_name);
        result
    }

    fn put_bytes(&self, key: &str, bytes: &[u8]) -> Result<Put> {
        self.put_create(key, PutPayload::from(bytes.to_vec()))
    }

    fn get(&self, key: &str) -> Result<Option<(Body, Meta)>> {
        match self.rt.block_on(self.store.get(&self.path(key))) {
            Ok(r) => {
                let meta = meta_of(&r.meta);
                let body = StreamBody {
                    handle: self.rt.handle().clone(),
                    stream: r.into_stream(),
                    chunk: bytes::Bytes::new(),
                };
                Ok(Some((Box::new(body), meta)))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(key, "get", e)),
        }
    }

    /// One ranged `GET` (a frame in a pack), streamed like [`Backend::get`].
    fn get_range(&self, key: &str, offset: u64, len: u64) -> Result<Option<Body>> {
        if len == 0 {
            return Ok(Some(Box::new(io::empty())));
        }
        let options = GetOptions {
            range: Some((offset..offset.saturating_add(len)).into()),
            ..GetOptions::default()
        };
        match self
            .rt
            .block_on(self.store.get_opts(&self.path(key), options))
        {
            Ok(r) => Ok(Some(Box::new(StreamBody {
                handle: self.rt.handle().clone(),
                stream: r.into_stream(),
                chunk: bytes::Bytes::new(),
            }))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(key, "get range", e)),
        }
    }

    fn head(&self, key: &str) -> Result<Option<Meta>> {
        match self.rt.block_on(self.store.head(&self.path(key))) {
            Ok(m) => Ok(Some(meta_of(&m))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(key, "head", e)),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        let metas: Vec<object_store::ObjectMeta> = self
            .rt
            .block_on(self.store.list(Some(&self.list_base(prefix))).try_collect())
            .map_err(|e| self.err(prefix, "list", e))?;
        let mut out: Vec<Listed> = metas.iter().filter_map(|m| self.listed(m)).collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Streams the listing a page at a time: a bucket lists keys in
    /// ascending byte order, the order [`Backend::list`] sorts to (and a
    /// caller that depends on it, as fsck's merge does, checks it). Each
    /// entry is handed to `f` outside the runtime, so `f` may call the
    /// backend again.
    fn list_each(&self, prefix: &str, f: &mut dyn FnMut(Listed) -> Result<()>) -> Result<()> {
        let mut pages = self.store.list(Some(&self.list_base(prefix)));
        while let Some(m) = self.rt.block_on(pages.next()) {
            let m = m.map_err(|e| self.err(prefix, "list", e))?;
            if let Some(l) = self.listed(&m) {
                f(l)?;
            }
        }
        Ok(())
    }

    fn delete(&self, key: &str) -> Result<()> {
        match self.rt.block_on(self.store.delete(&self.path(key))) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err(key, "delete", e)),
        }
    }

    fn sync_published(&self, _keys: &[String]) -> Result<()> {
        Ok(()) // a put that returned is durable in the bucket
    }

    fn quarantine(&self, key: &str, name: &str) -> Result<()> {
        let to = format!("{}{name}", super::QUARANTINE_PREFIX);
        self.rt
            .block_on(self.store.copy(&self.path(key), &self.path(&to)))
            .map_err(|e| self.err(key, "quarantine (copy)", e))?;
        self.delete(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn the_upload_budget_makes_a_taker_wait_for_room() {
        let b = Budget::default();
        let first = b.take(40 << 20);
        let second_in = AtomicBool::new(false);
        std::thread::scope(|sc| {
            let t = sc.spawn(|| {
                let _h = b.take(40 << 20);
                second_in.store(true, Ordering::SeqCst);
            });
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(
                !second_in.load(Ordering::SeqCst),
                "80 MiB would exceed 64 MiB"
            );
            drop(first);
            t.join().unwrap();
        });
        assert!(second_in.load(Ordering::SeqCst));
        assert_eq!(*b.used.lock().unwrap(), 0);
        // Larger than the whole budget: admitted alone.
        drop(b.take(UPLOAD_BUDGET * 2));
    }
}
