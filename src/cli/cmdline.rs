//! The command line as other users see it: `/proc/<pid>/cmdline`, which
//! `ps` shows to everyone on the machine for as long as the process runs
//! (the daemon: as long as the mount lives). A URL's credentials and the
//! values of `--header` options are masked there, in place.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use crate::source::redact::{MASK, redact};

/// `args` as the process's command line should show them: every argument
/// [`redact`]ed (a `-o` list option by option), and the value of each
/// `--header` masked after the header's name. `None` when that changes
/// nothing.
pub fn shown_args(args: &[OsString]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::with_capacity(args.len());
    let mut header_next = false;
    let mut options_next = false;
    for a in args {
        let bytes = a.as_bytes();
        let shown = match a.to_str() {
            None => bytes.to_vec(),
            Some(s) if header_next => mask_header(s).into_bytes(),
            Some(s) if s.starts_with("--header=") => {
                format!("--header={}", mask_header(&s["--header=".len()..])).into_bytes()
            }
            Some(s) if options_next || s.starts_with("-o") => s
                .split(',')
                .map(redact)
                .collect::<Vec<_>>()
                .join(",")
                .into_bytes(),
            Some(s) => redact(s).into_bytes(),
        };
        header_next = a == "--header";
        options_next = a == "-o";
        out.push(shown);
    }
    let changed = out.iter().zip(args).any(|(s, a)| s != a.as_bytes());
    changed.then_some(out)
}

/// `Name: value` as `Name: ***`.
fn mask_header(h: &str) -> String {
    match h.split_once(':') {
        Some((name, _)) => format!("{name}: {MASK}"),
        None => MASK.to_owned(),
    }
}

/// Rewrites this process's argument area (whose bounds the kernel gives
/// in `/proc/self/stat`) to hold [`shown_args`] of `args`, the arguments
/// it was started with. Does nothing when nothing is secret, or when the
/// area does not hold `args` as expected. The arguments have been copied
/// out before: nothing reads the area after this.
pub fn hide_secrets(args: &[OsString]) {
    let Some(shown) = shown_args(args) else {
        return;
    };
    let Some((start, end)) = arg_area() else {
        log::debug!("cannot find the argument area; the command line stays as it is");
        return;
    };
    let mut expected: Vec<u8> = Vec::new();
    for a in args {
        expected.extend_from_slice(a.as_bytes());
        expected.push(0);
    }
    if end.checked_sub(start) != Some(expected.len()) || start == 0 {
        log::debug!("the argument area is not the arguments; the command line stays as it is");
        return;
    }
    // SAFETY: [start, end) is this process's argument area as the kernel
    // reports it: mapped and writable (the strings argv points to, on the
    // initial stack), and no Rust value owns it. Its length was just
    // checked against the arguments it must hold, and its bytes are
    // compared with them before anything is written. No other thread
    // runs yet (this is called first thing in `main`).
    let area = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, expected.len()) };
    if area != expected.as_slice() {
        log::debug!("the argument area holds other bytes; the command line stays as it is");
        return;
    }
    let mut new: Vec<u8> = Vec::with_capacity(area.len());
    for s in shown {
        new.extend_from_slice(&s);
        new.push(0);
    }
    // Masks are longer than a secret of one or two bytes: then the end
    // is cut, and the area stays NUL-terminated so that the kernel shows
    // it, not what follows it.
    new.resize(area.len(), 0);
    if let Some(last) = new.last_mut() {
        *last = 0;
    }
    area.copy_from_slice(&new);
}

/// `arg_start` and `arg_end`, fields 48 and 49 of `/proc/self/stat`.
fn arg_area() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name, field 2, is in parentheses and may hold any byte.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3.
    let start = fields.get(48 - 3)?.parse().ok()?;
    let end = fields.get(49 - 3)?.parse().ok()?;
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    fn text(v: Vec<Vec<u8>>) -> Vec<String> {
        v.into_iter()
            .map(|b| String::from_utf8(b).unwrap())
            .collect()
    }

    #[test]
    fn secrets_are_masked_and_the_rest_kept() {
        assert_eq!(shown_args(&args(&["ptefs", "ls", "m.pte"])), None);
        let given = args(&[
            "ptefs",
            "mount",
            "http://u:PASSWORD@h/m.pte?X-Amz-Signature=SIG",
            "--header",
            "Authorization: Bearer TOKEN",
            "--header=X-Key: K",
            "-o",
            "fsname=http://u:PASSWORD@h/m.pte,ro",
            "-ofsname=http://u:PASSWORD@h/x,ro",
            "/mnt",
        ]);
        assert_eq!(
            text(shown_args(&given).unwrap()),
            [
                "ptefs",
                "mount",
                "http://u:***@h/m.pte?X-Amz-Signature=***",
                "--header",
                "Authorization: ***",
                "--header=X-Key: ***",
                "-o",
                "fsname=http://u:***@h/m.pte,ro",
                "-ofsname=http://u:***@h/x,ro",
                "/mnt",
            ]
        );
    }

    #[test]
    fn the_argument_area_is_found() {
        let (start, end) = arg_area().unwrap();
        let len: usize = std::env::args_os().map(|a| a.len() + 1).sum();
        assert_eq!(end - start, len);
    }
}
