//! The object store client of one remote source: a store, the object's
//! path in it, and a runtime to block on.

use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore};
use tokio::runtime::Runtime;

use super::Target;
use super::limits::{deadline, limit};
use super::store::{StoreError, store};
use crate::source::redact::Secrets;

/// How long after a failed read another read fails at once, with the same
/// error: a read the kernel fails is retried by it page by page, and
/// readers waiting for the same bytes ask again; all of them are the one
/// read that already waited its limit.
const FAILED_FOR: Duration = Duration::from_secs(2);

/// What was pinned when the object was opened.
#[derive(Debug, Clone)]
pub struct Pin {
    /// Size in bytes.
    pub len: u64,
    /// The ETag, when the server gives one.
    pub e_tag: Option<String>,
    /// The modification time.
    pub last_modified: SystemTime,
}

impl Pin {
    /// What identifies the object, for messages.
    pub fn identity(&self) -> &'static str {
        if self.e_tag.is_some() {
            "ETag"
        } else {
            "modification time"
        }
    }
}

/// Why a range read failed.
#[derive(Debug)]
pub enum GetError {
    /// The object is no longer the one pinned.
    Changed(String),
    /// Anything else: unreachable, timed out, refused.
    Other(String),
}

/// A connected client. Every error it gives has the source's secrets
/// scrubbed: the object store's quote the URL.
pub struct Client {
    runtime: Runtime,
    store: Arc<dyn ObjectStore>,
    path: Path,
    secrets: Secrets,
    /// Learn the size with a one-byte range request rather than `HEAD`: a
    /// presigned URL is signed for `GET` only.
    head_by_get: bool,
    /// What credentials went with the requests, for a refusal.
    credentials: String,
    /// The last read that failed (not for a change): when, and why.
    failed: Mutex<Option<(Instant, String)>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("path", &self.path).finish()
    }
}

impl Client {
    /// A client for the object `target` names. The runtime runs on the
    /// calling threads only (no worker threads of its own).
    pub fn connect(target: &Target) -> Result<Client, String> {
        let scrub = |e: StoreError| target.secrets.scrub(&e.to_string());
        let (store, path) = store(&target.url, target.access.as_ref()).map_err(scrub)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("starting the I/O runtime: {e}"))?;
        let head_by_get = target
            .access
            .as_ref()
            .is_some_and(|a| a.url.query().is_some());
        let credentials = match (&target.access, target.authorization()) {
            (Some(_), Some(from)) => format!("credentials sent: from {from}"),
            (Some(_), None) => "no credentials sent: give them as the URL's user info, \
                                with --header or PTEFS_HTTP_HEADERS, or in ~/.netrc"
                .to_owned(),
            (None, _) => {
                "credentials come from the environment and the provider's files".to_owned()
            }
        };
        Ok(Client {
            runtime,
            store,
            path,
            secrets: target.secrets.clone(),
            head_by_get,
            credentials,
            failed: Mutex::new(None),
        })
    }

    /// Runs `f` to its end, or fails once `deadline` has passed: the
    /// store's own limits may end it first, this ends it regardless.
    fn run<T>(
        &self,
        deadline: Instant,
        f: impl Future<Output = Result<T, GetError>>,
    ) -> Result<T, GetError> {
        self.runtime.block_on(async {
            tokio::time::timeout_at(deadline.into(), f)
                .await
                .unwrap_or_else(|_| {
                    Err(GetError::Other(format!(
                        "no answer within {:.1} s",
                        limit().as_secs_f64()
                    )))
                })
        })
    }

    async fn call(&self, options: GetOptions) -> Result<object_store::GetResult, GetError> {
        match self.store.get_opts(&self.path, options).await {
            Ok(r) => Ok(r),
            Err(e @ object_store::Error::Precondition { .. }) => {
                Err(GetError::Changed(self.secrets.scrub(&e.to_string())))
            }
            Err(
                e @ (object_store::Error::Unauthenticated { .. }
                | object_store::Error::PermissionDenied { .. }),
            ) => {
                // The status says it; the server's page about it (HTML)
                // would not.
                let text = e.to_string();
                let line = text.lines().next().unwrap_or_default();
                let line = line.split(": <").next().unwrap_or(line);
                Err(GetError::Other(format!(
                    "{} ({})",
                    self.secrets.scrub(line.trim_end_matches([' ', ':'])),
                    self.credentials
                )))
            }
            Err(e) => Err(GetError::Other(self.secrets.scrub(&e.to_string()))),
        }
    }

    /// The object's size and identity, within one [`limit`] for all the
    /// requests it takes.
    pub fn head(&self) -> Result<Pin, String> {
        let deadline = deadline();
        let text = |e| match e {
            GetError::Changed(e) | GetError::Other(e) => e,
        };
        let head = GetOptions {
            head: true,
            ..GetOptions::default()
        };
        let meta = if self.head_by_get {
            // Its first byte, whose answer gives the size; an empty
            // object has none to give, and is asked with HEAD.
            let first = GetOptions {
                range: Some(GetRange::Bounded(0..1)),
                ..GetOptions::default()
            };
            match self.run(deadline, async { Ok(self.call(first).await?.meta) }) {
                Ok(meta) => meta,
                Err(by_get) => self
                    .run(deadline, async { Ok(self.call(head).await?.meta) })
                    .map_err(|_| text(by_get))?,
            }
        } else {
            self.run(deadline, async { Ok(self.call(head).await?.meta) })
                .map_err(text)?
        };
        Ok(Pin {
            len: meta.size,
            e_tag: meta.e_tag.clone(),
            last_modified: meta.last_modified.into(),
        })
    }

    /// Bytes `range` of the object, only while it is still the one
    /// `pin` describes, within one [`limit`]; at once the error of a read
    /// that failed less than [`FAILED_FOR`] ago.
    pub fn get(&self, range: Range<u64>, pin: &Pin) -> Result<Vec<u8>, GetError> {
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, why)) = &*failed
            && at.elapsed() < FAILED_FOR
        {
            return Err(GetError::Other(why.clone()));
        }
        *failed = None;
        drop(failed);
        let got = self.get_now(range, pin);
        if let Err(GetError::Other(why)) = &got {
            *self.failed.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((Instant::now(), why.clone()));
        }
        got
    }

    fn get_now(&self, range: Range<u64>, pin: &Pin) -> Result<Vec<u8>, GetError> {
        let options = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            if_match: pin.e_tag.clone(),
            if_unmodified_since: pin.e_tag.is_none().then(|| pin.last_modified.into()),
            ..GetOptions::default()
        };
        let bytes = self.run(deadline(), async {
            let r = self.call(options).await?;
            // A server that ignores If-Match still says what it sent.
            if r.meta.e_tag.is_some() && r.meta.e_tag != pin.e_tag || r.meta.size != pin.len {
                return Err(GetError::Changed(format!(
                    "the server now has size {} and ETag {}",
                    r.meta.size,
                    r.meta.e_tag.as_deref().unwrap_or("(none)")
                )));
            }
            r.bytes()
                .await
                .map_err(|e| GetError::Other(self.secrets.scrub(&e.to_string())))
        })?;
        if bytes.len() as u64 != range.end - range.start {
            return Err(GetError::Other(format!(
                "asked for bytes {}..{} and got {} bytes",
                range.start,
                range.end,
                bytes.len()
            )));
        }
        Ok(bytes.to_vec())
    }
}
