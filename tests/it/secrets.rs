//! Credentials of remote sources: a password in a URL, a presigned URL's
//! signature, a `~/.netrc` password and header values reach the server
//! that asked for them, and appear nowhere a person or another user can
//! see: `/proc/mounts`, the daemon's command line, stderr, the daemon's
//! log, the files and extended attributes of the tree, `inspect`, `diff`
//! and `stat` output. Nor do they follow a redirect to another origin.
//!
//! The servers are started here: nginx with basic authentication (and a
//! location that takes a bearer token), a second nginx origin that logs
//! what credentials reach it, and moto's S3 server for presigned URLs.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::mounted::*;
use common::servers::*;
use common::*;

const USER: &str = "alice";
const PASSWORD: &str = "pw-Qx7Zr9K2vB";
/// The start of base64("alice:pw-Qx7Zr9K2vB"), as basic authentication
/// sends it.
const PASSWORD_BASE64: &str = "YWxpY2U6cHctUXg3WnI5SzJ2Qg";
const TOKEN: &str = "hf_tok3nV4lue9PqR";
const KEY: &str = "xk-K3yV4lue77Lm";

/// The servers and what they hold: `a.pte` (mlp.pte) behind basic
/// authentication, under `/token/` behind a bearer token, at
/// `/moved/a.pte` a redirect to another origin serving it without any,
/// and at `/here/a.pte` a redirect to `/a.pte`, and `ext.pte`
/// (mlp_external.pte); `b.pte` (dtypes.pte) and `w.ptd` (the data of
/// `ext.pte`) in moto's bucket `models`.
struct Servers {
    nginx: Nginx,
    moto: Moto,
    _root: tempfile::TempDir,
}

impl Servers {
    fn start() -> Servers {
        let root = tempfile::tempdir().unwrap();
        std::fs::copy(fixture("mlp.pte"), root.path().join("a.pte")).unwrap();
        std::fs::copy(fixture("mlp_external.pte"), root.path().join("ext.pte")).unwrap();
        std::fs::create_dir(root.path().join("token")).unwrap();
        std::fs::copy(fixture("mlp.pte"), root.path().join("token/a.pte")).unwrap();
        let hash = Command::new("openssl")
            .args(["passwd", "-apr1", PASSWORD])
            .output()
            .expect("openssl makes the htpasswd line");
        assert!(hash.status.success());
        let htpasswd = root.path().join("htpasswd");
        let line = format!("{USER}:{}", String::from_utf8(hash.stdout).unwrap());
        std::fs::write(&htpasswd, line).unwrap();
        let other_port = free_port();
        let r = root.path().display().to_string();
        let h = htpasswd.display();
        let nginx = Nginx::with_servers(root.path(), |d, port| {
            let d = d.display();
            let auth = format!("auth_basic \"models\"; auth_basic_user_file {h};");
            format!(
                "log_format creds '$request_method $uri $status auth=[$http_authorization] \
                 key=[$http_x_api_key]';\n  \
                 server {{ listen 127.0.0.1:{port}; root {r}; access_log {d}/creds.log creds;\n    \
                   location / {{ {auth} }}\n    \
                   location = /moved/a.pte {{ {auth} return 302 http://127.0.0.1:{other_port}/a.pte; }}\n    \
                   location = /here/a.pte {{ {auth} return 302 /a.pte; }}\n    \
                   location /token/ {{ if ($http_authorization != \"Bearer {TOKEN}\") \
                     {{ return 401; }} }}\n  }}\n  \
                 server {{ listen 127.0.0.1:{other_port}; root {r}; \
                   access_log {d}/other.log creds; }}"
            )
        });
        let moto = Moto::start("models");
        moto.put("models", "b.pte", &fixture("dtypes.pte"));
        moto.put("models", "w.ptd", &fixture("mlp_external.ptd"));
        Servers {
            nginx,
            moto,
            _root: root,
        }
    }

    /// `a.pte` with the password in the URL.
    fn with_password(&self, password: &str) -> String {
        format!(
            "http://{USER}:{password}@127.0.0.1:{}/a.pte",
            self.nginx.port
        )
    }

    /// `path` on nginx, with no credentials in the URL.
    fn plain(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.nginx.port)
    }
}

/// The strings that must appear nowhere: each secret as given, and as it
/// travels (base64 of basic authentication, percent-decoded).
struct Secrets(Vec<String>);

impl Secrets {
    fn new(presigned: &[&str]) -> Secrets {
        let mut all: Vec<String> = [PASSWORD, PASSWORD_BASE64, TOKEN, KEY]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for url in presigned {
            let query = url.split_once('?').unwrap().1;
            for kv in query.split('&') {
                let (k, v) = kv.split_once('=').unwrap();
                if k == "X-Amz-Signature" || k == "X-Amz-Credential" {
                    all.push(v.to_owned());
                    all.push(v.replace("%2F", "/"));
                }
            }
        }
        Secrets(all)
    }

    /// Fails naming `what` when `text` holds a secret.
    fn absent(&self, what: &str, text: &[u8]) {
        let text = String::from_utf8_lossy(text);
        for s in &self.0 {
            assert!(!text.contains(s.as_str()), "{what} shows {s:?}:\n{text}");
        }
    }
}

/// Runs `ptefs args` with the variables `env` added to its environment,
/// and none of the headers this shell might pass.
fn ptefs_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    ptefs()
        .args(args)
        .env_remove("PTEFS_HTTP_HEADERS")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn ok(args: &[&str], env: &[(&str, &str)]) -> Output {
    let out = ptefs_with(args, env);
    assert!(
        out.status.success(),
        "ptefs {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A run of `ptefs mount` logging at debug level to a file; unmounted on
/// drop when it mounted.
struct Mount {
    dir: PathBuf,
    log: PathBuf,
    out: Output,
    mounted: bool,
    _tmp: tempfile::TempDir,
}

impl Mount {
    /// Mounts `sources`, with `args` before them.
    fn run(sources: &[&str], args: &[&str], env: &[(&str, &str)]) -> Mount {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("mnt");
        std::fs::create_dir(&dir).unwrap();
        let log = tmp.path().join("daemon.log");
        let mut all = vec!["mount", "--log-file", log.to_str().unwrap()];
        all.extend(args);
        all.extend(sources);
        all.push(dir.to_str().unwrap());
        let mut env = env.to_vec();
        env.push(("RUST_LOG", "debug"));
        let out = ptefs_with(&all, &env);
        Mount {
            dir,
            log,
            mounted: out.status.success(),
            out,
            _tmp: tmp,
        }
    }

    /// [`Mount::run`], which must mount.
    fn new(sources: &[&str], args: &[&str], env: &[(&str, &str)]) -> Mount {
        let m = Mount::run(sources, args, env);
        assert!(
            m.out.status.success(),
            "{}",
            String::from_utf8_lossy(&m.out.stderr)
        );
        m
    }

    /// Its stdout and stderr.
    fn output(&self) -> Vec<u8> {
        [&self.out.stdout[..], &self.out.stderr].concat()
    }

    /// The daemon's command line, found by its mount point.
    fn daemon_cmdline(&self) -> Vec<u8> {
        let me = self.dir.to_str().unwrap().as_bytes();
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let name = e.file_name();
            if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            if cmdline.windows(me.len()).any(|w| w == me)
                && cmdline.starts_with(ptefs_bin().as_bytes())
            {
                found.push(cmdline);
            }
        }
        assert_eq!(found.len(), 1, "daemons of {}", self.dir.display());
        found.pop().unwrap()
    }

    /// Every path under the mount with its extended attributes and, for
    /// a file, its bytes, as one text.
    fn everything(&self) -> Vec<u8> {
        let script = "import os,sys\n\
            for d, dirs, files in os.walk(sys.argv[1]):\n\
            \x20   for n in dirs + files:\n\
            \x20       p = os.path.join(d, n)\n\
            \x20       print(p)\n\
            \x20       for k in os.listxattr(p):\n\
            \x20           print(' ', k, os.getxattr(p, k))\n\
            \x20       if os.path.isfile(p):\n\
            \x20           sys.stdout.flush(); sys.stdout.buffer.write(open(p, 'rb').read())\n";
        let out = Command::new("python3")
            .args(["-c", script])
            .arg(&self.dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// Unmounts, and returns the log.
    fn finish(mut self) -> Vec<u8> {
        self.unmount();
        std::fs::read(&self.log).unwrap_or_default()
    }

    /// Unmounts once, when it mounted.
    fn unmount(&mut self) {
        if self.mounted {
            self.mounted = false;
            let _ = ptefs().arg("umount").arg(&self.dir).status();
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        self.unmount();
    }
}

fn mounts() -> Vec<u8> {
    std::fs::read("/proc/mounts").unwrap()
}

fn servers_or_skip(test: &str) -> bool {
    server_or_skip(test, "nginx")
        && server_or_skip(test, "moto_server")
        && server_or_skip(test, "openssl")
}

#[test]
fn secrets_in_urls_are_shown_nowhere() {
    let test = "secrets_in_urls_are_shown_nowhere";
    if !servers_or_skip(test) || !fuse_or_skip(test) {
        return;
    }
    let s = Servers::start();
    let a = s.with_password(PASSWORD);
    let b = s.moto.presign("models", "b.pte");
    let missing = s.moto.presign("models", "absent.pte");
    let w = s.moto.presign("models", "w.ptd");
    let ext = format!(
        "http://{USER}:{PASSWORD}@127.0.0.1:{}/ext.pte",
        s.nginx.port
    );
    assert!(b.contains("X-Amz-Signature="), "{b}");
    let secrets = Secrets::new(&[&b, &missing, &w]);

    // Failing runs: a wrong password (401), an object that is not there.
    let wrong = s.with_password("wrong-pw-Zz9Yy8");
    for (url, why, shown) in [
        (
            &wrong,
            "401 Unauthorized (credentials sent: from the URL's user info)",
            "alice:***@",
        ),
        (&missing, "not found", "X-Amz-Signature=***"),
    ] {
        let m = Mount::run(&[url], &[], &[]);
        assert_eq!(m.out.status.code(), Some(2), "{:?}", m.out);
        let err = String::from_utf8_lossy(&m.out.stderr).into_owned();
        assert!(err.contains(why) && err.contains(shown), "{err}");
        assert!(!err.contains("wrong-pw-Zz9Yy8"), "{err}");
        secrets.absent("the output of a failing mount", &m.output());
        let log = m.finish();
        secrets.absent("the log of a failing mount", &log);
        let ls = ptefs_with(&["ls", url], &[]);
        assert_eq!(ls.status.code(), Some(2));
        assert!(!String::from_utf8_lossy(&ls.stderr).contains("wrong-pw-Zz9Yy8"));
        secrets.absent("stderr of a failing ls", &ls.stderr);
    }

    // A working run: the sources in one mount, a data file attached.
    let m = Mount::new(&[&a, &b, &ext], &["--data", &w], &[]);
    secrets.absent("the output of the mount", &m.output());
    let table = mounts();
    secrets.absent("/proc/mounts", &table);
    let shown_a = format!("http://alice:***@127.0.0.1:{}/a.pte", s.nginx.port);
    let table = String::from_utf8_lossy(&table).into_owned();
    assert!(table.contains(&shown_a), "{shown_a} in {table}");
    let cmdline = m.daemon_cmdline();
    secrets.absent("the daemon's command line", &cmdline);
    let cmdline = String::from_utf8_lossy(&cmdline);
    assert!(cmdline.contains(&shown_a), "{cmdline}");
    assert!(cmdline.contains("X-Amz-Signature=***"), "{cmdline}");
    let tree = m.everything();
    secrets.absent("the mounted tree", &tree);
    let tree = String::from_utf8_lossy(&tree);
    assert!(tree.contains("user.ptefs.source b'a.pte'"), "{tree}");
    assert!(tree.contains("user.ptefs.source b'b.pte'"), "{tree}");
    assert!(tree.contains("/b.pte/methods/forward/tensors/"), "{tree}");
    assert!(tree.contains("user.ptefs.source b'w.ptd'"), "{tree}");
    assert!(tree.contains("\"w.ptd\""), "index.json names w.ptd: {tree}");
    let log = m.finish();
    assert!(String::from_utf8_lossy(&log).contains("DEBUG"));
    secrets.absent("the log of a working mount", &log);

    // The commands that read without mounting.
    for args in [
        &["inspect", &a][..],
        &["inspect", "--json", &b],
        &["diff", &a, &b],
        &["diff", "--json", &a, &b],
        &["stat", "--json", &a, "header.json", "methods"],
        &["stat", &b, "header.json", "absent"],
        &["ls", "-lR", &b],
        &["cat", &a, "README.txt", "header.json"],
        &[
            "cat",
            &ext,
            "methods/forward/tensors/index.json",
            "--data",
            &w,
        ],
        &["inspect", &ext, "--data", &w],
    ] {
        let out = ptefs_with(args, &[]);
        assert!(out.status.code() != Some(2), "{args:?}: {out:?}");
        secrets.absent(&format!("{:?}", &args[..2]), &out.stdout);
        secrets.absent(&format!("stderr of {:?}", &args[..2]), &out.stderr);
    }
    let diff = ptefs_with(&["diff", "--json", &a, &b], &[]);
    let diff: serde_json::Value = serde_json::from_slice(&diff.stdout).unwrap();
    assert_eq!(diff["a"], shown_a.as_str());
    assert!(diff["b"].as_str().unwrap().contains("X-Amz-Signature=***"));

    // The presigned source named first: the fsname is redacted too.
    let m = Mount::new(&[&b], &[], &[]);
    let table = mounts();
    secrets.absent("/proc/mounts", &table);
    assert!(String::from_utf8_lossy(&table).contains("X-Amz-Signature=***"));
    secrets.absent("the daemon's command line", &m.daemon_cmdline());
}

#[test]
fn the_daemon_log_shows_no_secret_when_reads_fail() {
    let test = "the_daemon_log_shows_no_secret_when_reads_fail";
    if !servers_or_skip(test) || !fuse_or_skip(test) {
        return;
    }
    let s = Servers::start();
    let a = s.with_password(PASSWORD);
    let b = s.moto.presign("models", "b.pte");
    let secrets = Secrets::new(&[&b]);
    let m = Mount::new(&[&a, &b], &[], &[]);
    // The object replaced under the presigned URL: reads of its tensors
    // fail, and the daemon logs why.
    s.moto.put("models", "b.pte", &fixture("mlp.pte"));
    let tensors = m.dir.join("b.pte/methods/forward/tensors");
    let mut failed = 0;
    for e in std::fs::read_dir(&tensors).unwrap().flatten() {
        failed += usize::from(std::fs::read(e.path()).is_err());
    }
    assert!(failed > 0);
    let log = m.finish();
    let text = String::from_utf8_lossy(&log);
    assert!(text.contains("was modified"), "{text}");
    secrets.absent("the daemon's log", &log);
}

#[test]
fn credentials_from_netrc_and_headers_work_and_are_shown_nowhere() {
    let test = "credentials_from_netrc_and_headers_work_and_are_shown_nowhere";
    if !servers_or_skip(test) {
        return;
    }
    let s = Servers::start();
    let secrets = Secrets::new(&[]);
    let url = s.plain("a.pte");
    let token_url = s.plain("token/a.pte");
    let want = ok(&["ls", "-R", fixture("mlp.pte").to_str().unwrap()], &[]).stdout;

    // Without credentials: refused, with a reason.
    let home = tempfile::tempdir().unwrap();
    let home_s = home.path().to_str().unwrap();
    for u in [&url, &token_url] {
        let out = ptefs_with(&["ls", u], &[("HOME", home_s)]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("401 Unauthorized (no credentials sent: "),
            "{err}"
        );
        assert!(!err.contains("<html>"), "{err}");
    }

    // ~/.netrc, and NETRC naming another file.
    let netrc = format!(
        "machine example.com login bob password nope\n\
         machine 127.0.0.1\n  login {USER}\n  password {PASSWORD}\n"
    );
    std::fs::write(home.path().join(".netrc"), &netrc).unwrap();
    let out = ok(&["ls", "-R", &url], &[("HOME", home_s)]);
    assert_eq!(out.stdout, want);
    let elsewhere = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(elsewhere.path(), &netrc).unwrap();
    let env = [
        ("HOME", "/nonexistent"),
        ("NETRC", elsewhere.path().to_str().unwrap()),
    ];
    assert_eq!(ok(&["ls", "-R", &url], &env).stdout, want);

    // A bearer token: --header, or PTEFS_HTTP_HEADERS; a wrong one fails.
    let header = format!("Authorization: Bearer {TOKEN}");
    let out = ok(&["ls", "-R", "--header", &header, &token_url], &[]);
    assert_eq!(out.stdout, want);
    let many = format!("X-Api-Key: {KEY}\n\n{header}\n");
    let out = ok(&["ls", "-R", &token_url], &[("PTEFS_HTTP_HEADERS", &many)]);
    assert_eq!(out.stdout, want);
    let out = ptefs_with(
        &[
            "ls",
            "--header",
            "Authorization: Bearer wrong-tok-Qq1",
            &token_url,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("(credentials sent: from --header)"), "{err}");
    assert!(!err.contains("wrong-tok-Qq1"), "{err}");
    let out = ptefs_with(&["ls", "--header", "no colon", &token_url], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--header: a header is written `Name: value`"),
        "{err}"
    );
    let out = ptefs_with(
        &["ls", &token_url],
        &[("PTEFS_HTTP_HEADERS", "Authorization Bearer x")],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("PTEFS_HTTP_HEADERS: line 1"), "{err}");

    // The other commands take them too.
    let with_password = s.with_password(PASSWORD);
    for args in [
        &["inspect", "--header", &header, &token_url][..],
        &[
            "stat",
            "--json",
            "--header",
            &header,
            &token_url,
            "header.json",
        ],
        &["diff", "--header", &header, &token_url, &token_url],
        &["cat", "--header", &header, &token_url, "README.txt"],
        // The URL's user info wins over a header, for its source only.
        &["diff", "--header", &header, &with_password, &token_url],
    ] {
        let out = ok(args, &[("HOME", home_s)]);
        secrets.absent(&format!("{:?}", &args[..2]), &out.stdout);
        secrets.absent(&format!("stderr of {:?}", &args[..2]), &out.stderr);
    }

    if !fuse_or_skip(test) {
        return;
    }
    let with_header = ["--header", &header];
    let in_env = [("PTEFS_HTTP_HEADERS", header.as_str())];
    for (source, args, env) in [
        (&url, &[][..], &[("HOME", home_s)][..]),
        (&token_url, &with_header[..], &[][..]),
        (&token_url, &[][..], &in_env[..]),
    ] {
        let m = Mount::new(&[source], args, env);
        secrets.absent("the output of the mount", &m.output());
        secrets.absent("/proc/mounts", &mounts());
        let cmdline = m.daemon_cmdline();
        secrets.absent("the daemon's command line", &cmdline);
        if !args.is_empty() {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            assert!(cmdline.contains("--header Authorization: ***"), "{cmdline}");
        }
        let tree = m.everything();
        secrets.absent("the mounted tree", &tree);
        assert!(String::from_utf8_lossy(&tree).contains("user.ptefs.source b'a.pte'"));
        secrets.absent("the daemon's log", &m.finish());
    }
}

#[test]
fn credentials_do_not_follow_a_redirect_to_another_origin() {
    let test = "credentials_do_not_follow_a_redirect_to_another_origin";
    if !servers_or_skip(test) {
        return;
    }
    let s = Servers::start();
    let want = ok(&["ls", "-R", fixture("mlp.pte").to_str().unwrap()], &[]).stdout;
    let key = format!("X-Api-Key: {KEY}");
    // The password in the URL, with a header of its own; then the
    // password from ~/.netrc.
    let moved = format!(
        "http://{USER}:{PASSWORD}@127.0.0.1:{}/moved/a.pte",
        s.nginx.port
    );
    let out = ok(&["ls", "-R", "--header", &key, &moved], &[]);
    assert_eq!(out.stdout, want);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".netrc"),
        format!("default login {USER} password {PASSWORD}\n"),
    )
    .unwrap();
    let out = ok(
        &["cat", &s.plain("moved/a.pte"), "header.json"],
        &[("HOME", home.path().to_str().unwrap())],
    );
    assert!(!out.stdout.is_empty());
    // The origin asked for them and got them; the other origin served the
    // file and saw none.
    let here = s.nginx.log_named("creds.log");
    assert!(
        here.iter()
            .any(|l| l.contains("/moved/a.pte 302 auth=[Basic ") && l.contains(KEY)),
        "{here:#?}"
    );
    let other = s.nginx.log_named("other.log");
    assert!(other.len() >= 4, "{other:#?}");
    for l in &other {
        assert!(l.ends_with("auth=[-] key=[-]"), "{l}");
    }
    // A redirect within the origin keeps them: the target asks for them.
    let here_url = format!(
        "http://{USER}:{PASSWORD}@127.0.0.1:{}/here/a.pte",
        s.nginx.port
    );
    let out = ok(&["ls", "-R", &here_url], &[]);
    assert_eq!(out.stdout, want);
    let here = s.nginx.log_named("creds.log");
    assert!(
        here.iter()
            .any(|l| l.starts_with("GET /a.pte 206 auth=[Basic ")),
        "{here:#?}"
    );
}

/// Secrets in every form a URL may hold one, given to the real binary
/// for a server that refuses connections (so that every error quotes the
/// URL) and to clap as a value it refuses: none reaches stdout or stderr,
/// as written or percent-decoded.
#[test]
fn no_form_of_secret_in_a_url_reaches_any_message() {
    let port = free_port();
    let host = format!("127.0.0.1:{port}");
    let secret = |i: usize| format!("Zq{i}x7Secr3tV");
    let mut cases: Vec<(String, Vec<String>)> = Vec::new();
    // A password holding an unencoded `/`, `#` or `?`.
    for (i, c) in ['/', '#', '?'].into_iter().enumerate() {
        let (a, b) = (secret(i), secret(10 + i));
        cases.push((format!("http://alice:{a}{c}{b}@{host}/m.pte"), vec![a, b]));
    }
    // Parameters after `;`, and query parameters no list of names holds.
    let s = secret(20);
    cases.push((format!("http://{host}/m.pte;sig={s}"), vec![s]));
    for (i, name) in [
        "pwd",
        "jwt",
        "hdnts",
        "code",
        "sessionid",
        "hmac",
        "passcode",
    ]
    .into_iter()
    .enumerate()
    {
        let s = secret(30 + i);
        cases.push((format!("https://{host}/m.pte?x=1&{name}={s}"), vec![s]));
    }
    // A user name holding `%3A`: the password is in it.
    let s = secret(40);
    cases.push((format!("http://alice%3A{s}@{host}/m.pte"), vec![s]));
    // Schemes in any case, and one ptefs does not read (a path, then).
    let s = secret(50);
    cases.push((format!("HTTP://alice:{s}@{host}/m.pte"), vec![s]));
    let (a, b) = (secret(60), secret(61));
    cases.push((format!("Ftp://alice:{a}/{b}@{host}/m.pte"), vec![a, b]));
    let program = fixture("mlp.pte").display().to_string();
    for (url, secrets) in &cases {
        let runs = [
            ptefs_with(&["ls", url], &[]),
            ptefs_with(&["inspect", "--top", url, &program], &[]),
            ptefs_with(&["ls", &format!("--data={url}"), &program], &[]),
        ];
        for out in runs {
            assert!(!out.status.success(), "{url}");
            let text = [out.stdout, out.stderr].concat();
            let text = String::from_utf8_lossy(&text);
            assert!(text.contains("***"), "{url}: {text}");
            for s in secrets {
                assert!(!text.contains(s.as_str()), "{url} shows {s}:\n{text}");
            }
        }
    }
}
