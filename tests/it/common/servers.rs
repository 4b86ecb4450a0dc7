//! Servers the remote-source tests start on localhost: nginx serving a
//! directory with range support, moto's S3 server, and listeners that
//! accept and then never answer (or stop halfway).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::required::tool_or_skip;

/// True when `program` can run; otherwise skips `test` loudly, or panics
/// when the run requires every component (CI, where scripts/setup.sh
/// installs the servers).
pub fn server_or_skip(test: &str, program: &str) -> bool {
    tool_or_skip(test, program, "scripts/setup.sh").is_some()
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something accepts connections on `port`.
fn wait_listening(port: u16, child: &mut Child, what: &str) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited with {status}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what} did not listen on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// nginx serving `root` on a port of its own, logging the bytes it sends.
pub struct Nginx {
    pub port: u16,
    pub root: PathBuf,
    child: Child,
    dir: tempfile::TempDir,
}

impl Nginx {
    /// Starts nginx (one process, in the foreground) serving `root`.
    pub fn start(root: &Path) -> Nginx {
        let root_shown = root.display().to_string();
        Nginx::with_servers(root, |_, port| {
            format!("server {{ listen 127.0.0.1:{port}; root {root_shown}; }}")
        })
    }

    /// Starts nginx with the `server` blocks `servers` gives for its
    /// directory (for configuration and logs) and its port; the format
    /// `sent` logs to `access.log` unless a server says otherwise.
    pub fn with_servers(root: &Path, servers: impl FnOnce(&Path, u16) -> String) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let d = dir.path().display();
        let conf = format!(
            "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{}}\nhttp {{\n  log_format sent '$request_method $uri $status $bytes_sent';\n  \
             access_log {d}/access.log sent;\n  client_body_temp_path {d};\n  proxy_temp_path {d};\n  \
             fastcgi_temp_path {d};\n  uwsgi_temp_path {d};\n  scgi_temp_path {d};\n  \
             {}\n}}\n",
            servers(dir.path(), port)
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let mut child = Command::new("nginx")
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .arg("-p")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        wait_listening(port, &mut child, "nginx");
        Nginx {
            port,
            root: root.to_owned(),
            child,
            dir,
        }
    }

    /// The URL of `name` under the root.
    pub fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }

    /// Bytes sent so far (headers included), from the access log, which
    /// nginx writes as each request ends.
    pub fn bytes_sent(&self) -> u64 {
        self.log()
            .iter()
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    /// Access log lines: `METHOD URI STATUS BYTES`.
    pub fn log(&self) -> Vec<String> {
        self.log_named("access.log")
    }

    /// Lines of the log `name` in nginx's directory.
    pub fn log_named(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join(name))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Stops it; its port stays free for whoever binds next.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.kill();
    }
}

/// moto's S3 server on a port of its own, with one bucket.
pub struct Moto {
    pub port: u16,
    child: Child,
}

impl Moto {
    /// Starts `moto_server` and creates `bucket`.
    pub fn start(bucket: &str) -> Moto {
        let port = free_port();
        let mut child = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts");
        wait_listening(port, &mut child, "moto_server");
        let m = Moto { port, child };
        m.boto(&format!("s3.create_bucket(Bucket={bucket:?})"));
        m
    }

    /// The environment the S3 client reads (moto takes any credentials).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", self.port),
            ),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }

    /// Runs `code` with an S3 client `s3` pointed at the server; returns
    /// what it prints.
    pub fn boto(&self, code: &str) -> String {
        let script = format!(
            "import boto3, sys\nfrom botocore.config import Config\n\
             s3 = boto3.client('s3', endpoint_url='http://127.0.0.1:{}', \
             aws_access_key_id='testing', aws_secret_access_key='testing', region_name='us-east-1', \
             config=Config(signature_version='s3v4'))\n{code}\n",
            self.port
        );
        let out = Command::new("python3")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{code}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// A presigned URL (signature version 4) to GET `bucket/key`.
    pub fn presign(&self, bucket: &str, key: &str) -> String {
        let code = format!(
            "print(s3.generate_presigned_url('get_object', \
             Params={{'Bucket': {bucket:?}, 'Key': {key:?}}}, ExpiresIn=3600))"
        );
        self.boto(&code).trim().to_owned()
    }

    /// Stores `path` as `bucket/key`.
    pub fn put(&self, bucket: &str, key: &str, path: &Path) {
        self.boto(&format!(
            "s3.put_object(Bucket={bucket:?}, Key={key:?}, Body=open({:?}, 'rb').read())",
            path.display().to_string()
        ));
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP server for one file with range support that, for a range
/// starting at or after `stall_from`, sends the headers and `sent` bytes
/// of the body, then nothing more (a server that stops answering
/// mid-transfer). Runs until the process ends.
pub fn stalling_server(bytes: Vec<u8>, stall_from: usize, sent: usize) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let bytes = std::sync::Arc::new(bytes);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let bytes = bytes.clone();
            std::thread::spawn(move || serve_stalling(conn, &bytes, stall_from, sent));
        }
    });
    port
}

fn serve_stalling(mut conn: TcpStream, bytes: &[u8], stall_from: usize, sent: usize) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    loop {
        let mut request = String::new();
        let mut range = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some(r) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
                let (a, b) = r.trim().split_once('-').unwrap();
                range = Some((a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap()));
            }
            if request.is_empty() {
                request = line;
            }
        }
        let common = "ETag: \"pinned\"\r\nLast-Modified: Mon, 02 Jan 2023 00:00:00 GMT\r\n";
        let (status, body, stall) = match range {
            _ if request.starts_with("HEAD") => ("200 OK", &[][..], false),
            Some((a, b)) => ("206 Partial Content", &bytes[a..=b], a >= stall_from),
            None => ("200 OK", bytes, false),
        };
        let len = if request.starts_with("HEAD") {
            bytes.len()
        } else {
            body.len()
        };
        let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {len}\r\n{common}");
        if let Some((a, b)) = range {
            head.push_str(&format!("Content-Range: bytes {a}-{b}/{}\r\n", bytes.len()));
        }
        head.push_str("\r\n");
        if conn.write_all(head.as_bytes()).is_err() {
            return;
        }
        if stall {
            let _ = conn.write_all(&body[..sent.min(body.len())]);
            // Silent from here on, the connection left open.
            std::thread::sleep(Duration::from_secs(3600));
            return;
        }
        if conn.write_all(body).is_err() {
            return;
        }
    }
}

/// A listener on `port` that accepts connections and never answers.
pub fn silent_listener(port: u16) -> TcpListener {
    let l = TcpListener::bind(("127.0.0.1", port)).expect("the port is free again");
    let accepting = l.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in accepting.incoming().flatten() {
            held.push(c);
        }
    });
    l
}
