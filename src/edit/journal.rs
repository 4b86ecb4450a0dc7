//! The journal of a writable mount: every write it acknowledged, appended
//! to a file in a work directory before the write is answered, so that a
//! killed daemon loses nothing and a later mount of the same source (or
//! `ptefs edits`, `ptefs commit`) finds the edits again.
//!
//! The file starts with a header naming the sources and what identifies
//! their contents; then come records, each with its own CRC-32, so a tail
//! torn by a crash reads as such and is dropped. A write made through a
//! file opened with `O_TRUNC` is recorded as pending in a group that only
//! counts once a closing record says the whole file was written.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Read};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::source::Source;

/// The first bytes of a journal.
const MAGIC: &[u8; 8] = b"PTEFSJ1\n";
/// The first bytes of each record.
const RECORD: u32 = 0x5054_4a52;
/// Bytes of a record before its path and data.
const FIXED: usize = 28;
/// Bytes sampled at each end of a source for its identity.
const SAMPLE: u64 = 64 << 10;

const KIND_WRITE: u8 = 1;
const KIND_PENDING: u8 = 2;
const KIND_DONE: u8 = 3;

/// What identifies a source's contents: where it is, its size and time,
/// and the sha256 of its first and last 64 KiB.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The absolute path (or URL) it was opened by.
    pub path: PathBuf,
    /// Bytes.
    pub len: u64,
    /// Modification time, seconds and nanoseconds.
    pub mtime: (i64, i64),
    /// sha256 of the first and last 64 KiB.
    pub sample_sha256: String,
}

impl Identity {
    /// The identity of `source` as it is open.
    pub fn of(source: &Source) -> Identity {
        let path = match source.is_remote() {
            true => source.path.clone(),
            false => std::path::absolute(&source.path).unwrap_or_else(|_| source.path.clone()),
        };
        let bytes = source.bytes();
        let len = bytes.len() as u64;
        let mut h = Sha256::new();
        if !source.is_remote() {
            h.update(&bytes[..SAMPLE.min(len) as usize]);
            h.update(&bytes[len.saturating_sub(SAMPLE) as usize..]);
        }
        Identity {
            path,
            len: source.opened.len,
            mtime: source.opened.mtime,
            sample_sha256: hex(&h.finalize()),
        }
    }

    /// What differs between the identity recorded and this one, if
    /// anything.
    pub fn differs(&self, now: &Identity) -> Option<String> {
        if self.path != now.path {
            return Some(format!("it was {}", self.path.display()));
        }
        if self.len != now.len {
            return Some(format!("it had {} bytes, now {}", self.len, now.len));
        }
        if self.mtime != now.mtime {
            return Some("its modification time moved".to_owned());
        }
        if self.sample_sha256 != now.sample_sha256 {
            return Some("its bytes differ".to_owned());
        }
        None
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The journal's header: the sources its records index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The sources, in the order records number them.
    pub sources: Vec<Identity>,
}

/// One record read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// New bytes for `len` bytes at `offset` of source `source`, held in
    /// the journal at `at`, written through tree path `path`; pending in
    /// `group` until a [`Record::Done`] of it.
    Write {
        /// Index in the header's sources.
        source: usize,
        /// Offset in the source.
        offset: u64,
        /// Bytes.
        len: u64,
        /// Where the bytes are in the journal.
        at: u64,
        /// The tree path written through.
        path: String,
        /// The pending group, if any.
        group: Option<u32>,
    },
    /// Group `0` was written whole: its writes count.
    Done(u32),
}

/// Why a journal cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The file system said no.
    #[error("{}: {error}", crate::source::redact::shown(path))]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        error: io::Error,
    },
    /// Another process holds the journal.
    #[error(
        "{}: the edits of this source are held by another writable mount; unmount it first",
        crate::source::redact::shown(path)
    )]
    Busy {
        /// The journal.
        path: PathBuf,
    },
    /// The journal was kept for other sources, or another version of them.
    #[error(
        "{}: edits are kept for another version of {} ({why}); commit or list them with the source they were made to, or mount with --discard-edits to drop them",
        crate::source::redact::shown(path),
        crate::source::redact::shown(file)
    )]
    Mismatch {
        /// The journal.
        path: PathBuf,
        /// The source that differs.
        file: PathBuf,
        /// What differs.
        why: String,
    },
    /// The file is no journal.
    #[error(
        "{}: not a ptefs edit journal ({why})",
        crate::source::redact::shown(path)
    )]
    NotJournal {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

fn at(path: &Path) -> impl FnOnce(io::Error) -> JournalError + '_ {
    move |error| JournalError::Io {
        path: path.to_owned(),
        error,
    }
}

/// The directory journals live in by default: `$XDG_STATE_HOME/ptefs/edits`,
/// or `~/.local/state/ptefs/edits`.
pub fn default_base() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })?;
    Some(state.join("ptefs").join("edits"))
}

/// The directory of the journal of the source at absolute `path`, under
/// `base`: the source's base name and a digest of its path.
pub fn dir_for(base: &Path, path: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let digest = Sha256::digest(path.as_os_str().as_bytes());
    let name = path
        .file_name()
        .map_or_else(|| "source".into(), |n| n.to_string_lossy().into_owned());
    base.join(format!("{name}-{}", &hex(&digest)[..16]))
}

/// The journal file in journal directory `dir`.
pub fn file_in(dir: &Path) -> PathBuf {
    dir.join("journal")
}

/// A journal open for appending, locked against other mounts.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
    /// One past the last whole record.
    end: u64,
}

impl Journal {
    /// Opens (or starts) the journal in `dir` for `header`'s sources,
    /// locked for this process. Returns it with the records it already
    /// holds; a torn tail is cut off. With `discard`, earlier records are
    /// dropped, whatever sources they were made to.
    pub fn open(
        dir: &Path,
        header: &Header,
        discard: bool,
    ) -> Result<(Journal, Vec<Record>), JournalError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(at(dir))?;
        let path = file_in(dir);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(at(&path))?;
        lock(&file, &path)?;
        let len = file.metadata().map_err(at(&path))?.len();
        let mut journal = Journal {
            file,
            path: path.clone(),
            end: 0,
        };
        if len == 0 || discard {
            journal.start(header)?;
            return Ok((journal, Vec::new()));
        }
        let (held, records, end) = read_all(&journal.file, &path, len)?;
        check_sources(&path, &held, header)?;
        if end < len {
            log::warn!(
                "{}: dropped a torn record at its end ({} bytes)",
                path.display(),
                len - end
            );
            journal.file.set_len(end).map_err(at(&path))?;
        }
        journal.end = end;
        Ok((journal, records))
    }

    /// Writes the header over whatever the file held, durably.
    fn start(&mut self, header: &Header) -> Result<(), JournalError> {
        let json = serde_json::to_vec(header).expect("a header serializes");
        let mut b = Vec::with_capacity(json.len() + 16);
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&(json.len() as u32).to_le_bytes());
        b.extend_from_slice(&json);
        b.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
        let path = self.path.clone();
        self.file.set_len(0).map_err(at(&path))?;
        self.file.write_all_at(&b, 0).map_err(at(&path))?;
        self.file.sync_all().map_err(at(&path))?;
        // The file's name is durable once its directory is.
        if let Some(dir) = path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(at(dir))?;
        }
        self.end = b.len() as u64;
        Ok(())
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file, for reading the bytes records hold.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// One past the last record.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Appends a write of `data` at `offset` of source `source` through
    /// `path`, pending in `group` if given; returns where `data` is in the
    /// journal. Fails whole: a record that cannot be written entirely is
    /// cut off again.
    pub fn append_write(
        &mut self,
        source: usize,
        offset: u64,
        path: &str,
        data: &[u8],
        group: Option<u32>,
    ) -> io::Result<u64> {
        let kind = match group {
            Some(_) => KIND_PENDING,
            None => KIND_WRITE,
        };
        // The path is only shown; its length is kept in 16 bits.
        let mut cut = path.len().min(u16::MAX as usize);
        while !path.is_char_boundary(cut) {
            cut -= 1;
        }
        let path = &path[..cut];
        let head = fixed(
            kind,
            source,
            group.unwrap_or(0),
            offset,
            data.len(),
            path.len(),
        );
        let mut crc = crc32fast::Hasher::new();
        crc.update(&head);
        crc.update(path.as_bytes());
        crc.update(data);
        let mut front = head.to_vec();
        front.extend_from_slice(path.as_bytes());
        let data_at = self.end + front.len() as u64;
        let tail_at = data_at + data.len() as u64;
        let appended = self
            .file
            .write_all_at(&front, self.end)
            .and_then(|()| self.file.write_all_at(data, data_at))
            .and_then(|()| {
                self.file
                    .write_all_at(&crc.finalize().to_le_bytes(), tail_at)
            });
        self.settle(appended, tail_at + 4)?;
        Ok(data_at)
    }

    /// Appends that pending `group` was written whole.
    pub fn append_done(&mut self, group: u32) -> io::Result<()> {
        let head = fixed(KIND_DONE, 0, group, 0, 0, 0);
        let mut b = head.to_vec();
        b.extend_from_slice(&crc32fast::hash(&head).to_le_bytes());
        let appended = self.file.write_all_at(&b, self.end);
        self.settle(appended, self.end + b.len() as u64)
    }

    /// Moves the end past a record written whole, or cuts a partial one
    /// off so that nothing of it stays.
    fn settle(&mut self, appended: io::Result<()>, new_end: u64) -> io::Result<()> {
        match appended {
            Ok(()) => {
                self.end = new_end;
                Ok(())
            }
            Err(e) => {
                if let Err(cut) = self.file.set_len(self.end) {
                    log::error!(
                        "{}: cannot cut a failed record off: {cut}",
                        self.path.display()
                    );
                }
                Err(e)
            }
        }
    }

    /// Makes every record appended so far durable.
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Removes the journal and its directory.
    pub fn remove(self) -> io::Result<()> {
        std::fs::remove_file(&self.path)?;
        if let Some(dir) = self.path.parent() {
            // Empty unless the user put something there: then it stays.
            let _ = std::fs::remove_dir(dir);
        }
        Ok(())
    }
}

fn fixed(
    kind: u8,
    source: usize,
    group: u32,
    offset: u64,
    len: usize,
    path_len: usize,
) -> [u8; FIXED] {
    let mut h = [0u8; FIXED];
    h[0..4].copy_from_slice(&RECORD.to_le_bytes());
    h[4] = kind;
    h[6..8].copy_from_slice(&(source as u16).to_le_bytes());
    h[8..12].copy_from_slice(&group.to_le_bytes());
    h[12..20].copy_from_slice(&offset.to_le_bytes());
    h[20..24].copy_from_slice(&(len as u32).to_le_bytes());
    h[24..26].copy_from_slice(&(path_len as u16).to_le_bytes());
    h
}

/// How long a lock held by a daemon that is ending is waited for.
const LOCK_WAIT: std::time::Duration = match cfg!(test) {
    true => std::time::Duration::from_millis(200),
    false => std::time::Duration::from_secs(10),
};

/// Tries to take `file`'s lock (`how`, without blocking) until `LOCK_WAIT`
/// has passed: a daemon whose mount was just unmounted still holds it
/// while it ends. Returns whether it was taken.
fn try_lock(file: &File, how: i32) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let start = std::time::Instant::now();
    loop {
        // SAFETY: flock on a descriptor this function borrows; the lock
        // goes with the descriptor, so it lasts as long as the file is open.
        if unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(e);
        }
        if start.elapsed() >= LOCK_WAIT {
            return Ok(false);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Takes the journal's lock for this process, or says that another holds
/// it.
fn lock(file: &File, path: &Path) -> Result<(), JournalError> {
    match try_lock(file, libc::LOCK_EX) {
        Ok(true) => Ok(()),
        Ok(false) => Err(JournalError::Busy {
            path: path.to_owned(),
        }),
        Err(error) => Err(JournalError::Io {
            path: path.to_owned(),
            error,
        }),
    }
}

/// Waits (a while) until no process holds the journal at `path`: the
/// daemon of a mount just unmounted has ended with it. True once none
/// does, or the journal is gone.
pub fn wait_released(path: &Path) -> bool {
    match File::open(path) {
        Ok(f) => try_lock(&f, libc::LOCK_SH).unwrap_or(false),
        Err(_) => true,
    }
}

/// Checks that the journal was kept for the sources of `header`.
fn check_sources(path: &Path, held: &Header, header: &Header) -> Result<(), JournalError> {
    if held.sources.len() != header.sources.len() {
        return Err(JournalError::Mismatch {
            path: path.to_owned(),
            file: header
                .sources
                .first()
                .map(|s| s.path.clone())
                .unwrap_or_default(),
            why: format!(
                "they were made with {} source file(s), this mount has {}",
                held.sources.len(),
                header.sources.len()
            ),
        });
    }
    for (was, now) in held.sources.iter().zip(&header.sources) {
        if let Some(why) = was.differs(now) {
            return Err(JournalError::Mismatch {
                path: path.to_owned(),
                file: now.path.clone(),
                why,
            });
        }
    }
    Ok(())
}

/// Checks that `sources` are those the journal at `path` was kept for.
pub fn check(path: &Path, held: &Header, sources: &[&Source]) -> Result<(), JournalError> {
    let now = Header {
        sources: sources.iter().map(|s| Identity::of(s)).collect(),
    };
    check_sources(path, held, &now)
}

/// Reads the journal at `path` up to `upto` bytes (a length the daemon
/// made durable): its header, its records and the file to read their
/// bytes from.
pub fn read(path: &Path, upto: Option<u64>) -> Result<(Header, Vec<Record>, File), JournalError> {
    let file = File::open(path).map_err(at(path))?;
    let len = file.metadata().map_err(at(path))?.len();
    let len = upto.map_or(len, |u| u.min(len));
    let (header, records, _) = read_all(&file, path, len)?;
    Ok((header, records, file))
}

/// The header and the whole records of the first `len` bytes of `file`,
/// and where the last whole record ends.
fn read_all(
    file: &File,
    path: &Path,
    len: u64,
) -> Result<(Header, Vec<Record>, u64), JournalError> {
    let not = |why: &str| JournalError::NotJournal {
        path: path.to_owned(),
        why: why.to_owned(),
    };
    let mut r = BufReader::with_capacity(1 << 20, file.take(len));
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic).map_err(|_| not("too short"))?;
    if &magic != MAGIC {
        return Err(not("no journal header"));
    }
    let mut n = [0u8; 4];
    r.read_exact(&mut n)
        .map_err(|_| not("its header is cut short"))?;
    let json_len = u32::from_le_bytes(n) as u64;
    if json_len > len {
        return Err(not("its header is cut short"));
    }
    let mut json = vec![0; json_len as usize];
    r.read_exact(&mut json)
        .map_err(|_| not("its header is cut short"))?;
    r.read_exact(&mut n)
        .map_err(|_| not("its header is cut short"))?;
    if crc32fast::hash(&json) != u32::from_le_bytes(n) {
        return Err(not("its header's checksum does not hold"));
    }
    let header: Header =
        serde_json::from_slice(&json).map_err(|e| not(&format!("its header: {e}")))?;
    let mut pos = 16 + json_len;
    let mut records = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    // Each record is read whole before it counts: the first that is not
    // is where a crash tore the file.
    loop {
        let mut head = [0u8; FIXED];
        if r.read_exact(&mut head).is_err() {
            break;
        }
        let word = |a: usize| u32::from_le_bytes(head[a..a + 4].try_into().expect("4 bytes"));
        if word(0) != RECORD {
            break;
        }
        let kind = head[4];
        let source = u16::from_le_bytes([head[6], head[7]]) as usize;
        let group = word(8);
        let offset = u64::from_le_bytes(head[12..20].try_into().expect("8 bytes"));
        let data_len = word(20) as u64;
        let path_len = u16::from_le_bytes([head[24], head[25]]) as usize;
        let mut crc = crc32fast::Hasher::new();
        crc.update(&head);
        let mut p = vec![0u8; path_len];
        if r.read_exact(&mut p).is_err() {
            break;
        }
        crc.update(&p);
        let mut left = data_len;
        let mut short = false;
        while left > 0 {
            let n = left.min(buf.len() as u64) as usize;
            if r.read_exact(&mut buf[..n]).is_err() {
                short = true;
                break;
            }
            crc.update(&buf[..n]);
            left -= n as u64;
        }
        if short || r.read_exact(&mut n).is_err() || crc.finalize() != u32::from_le_bytes(n) {
            break;
        }
        let data_at = pos + FIXED as u64 + path_len as u64;
        records.push(match kind {
            KIND_DONE => Record::Done(group),
            KIND_WRITE | KIND_PENDING if source < header.sources.len() => Record::Write {
                source,
                offset,
                len: data_len,
                at: data_at,
                path: String::from_utf8_lossy(&p).into_owned(),
                group: (kind == KIND_PENDING).then_some(group),
            },
            _ => break,
        });
        pos = data_at + data_len + 4;
    }
    Ok((header, records, pos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            sources: vec![Identity {
                path: "/x/a.pte".into(),
                len: 100,
                mtime: (1, 2),
                sample_sha256: "00".into(),
            }],
        }
    }

    #[test]
    fn records_read_back_and_a_torn_tail_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let jdir = dir.path().join("j");
        let (mut j, held) = Journal::open(&jdir, &header(), false).unwrap();
        assert!(held.is_empty());
        let a = j.append_write(0, 10, "t/0.bin", b"abcd", None).unwrap();
        j.append_write(0, 20, "t/1.bin", b"xy", Some(7)).unwrap();
        j.append_done(7).unwrap();
        let end = j.end();
        // A record cut short, as a crash leaves it.
        j.file().write_all_at(&RECORD.to_le_bytes(), end).unwrap();
        j.file()
            .write_all_at(&[KIND_WRITE, 0, 0, 0], end + 4)
            .unwrap();
        drop(j);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file_in(&jdir))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let (j, held) = Journal::open(&jdir, &header(), false).unwrap();
        assert_eq!(j.end(), end, "the torn record is cut off");
        assert_eq!(
            held[0],
            Record::Write {
                source: 0,
                offset: 10,
                len: 4,
                at: a,
                path: "t/0.bin".into(),
                group: None
            }
        );
        assert!(matches!(held[1], Record::Write { group: Some(7), .. }));
        assert_eq!(held[2], Record::Done(7));
        let mut b = [0u8; 4];
        j.file().read_exact_at(&mut b, a).unwrap();
        assert_eq!(&b, b"abcd");
        // Held by this process: another open is refused.
        let busy = Journal::open(&jdir, &header(), false).unwrap_err();
        assert!(matches!(busy, JournalError::Busy { .. }), "{busy}");
        drop(j);
        let mut other = header();
        other.sources[0].len = 99;
        let e = Journal::open(&jdir, &other, false).unwrap_err();
        assert!(e.to_string().contains("--discard-edits"), "{e}");
        let (_, held) = Journal::open(&jdir, &other, true).unwrap();
        assert!(held.is_empty());
    }
}
