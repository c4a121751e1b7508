//! HTTP/1.1 as the remote approvals endpoint speaks it: one request and
//! one answer per connection (`Connection: close`), bodies sized by
//! `Content-Length`, JSON both ways. Small limits: this is a question
//! channel, not a web server.
use std::io::{self, BufRead, BufReader, Read, Write};

/// Largest request or answer head (request line and headers).
const MAX_HEAD: usize = 16 * 1024;
/// Largest body.
const MAX_BODY: usize = 1024 * 1024;

/// One request.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    /// The path, query string included.
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn bad(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

/// Reads the head: the first line and the headers (names lower-cased).
fn read_head<R: BufRead>(r: &mut R) -> io::Result<(String, Vec<(String, String)>)> {
    let mut total = 0;
    let mut first = String::new();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        let n = r.by_ref().take(MAX_HEAD as u64).read_line(&mut line)?;
        total += n;
        if n == 0 {
            return Err(bad("connection closed in the head"));
        }
        if total > MAX_HEAD {
            return Err(bad("head too large"));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if first.is_empty() {
            first = line.to_owned();
            continue;
        }
        if line.is_empty() {
            return Ok((first, headers));
        }
        let (k, v) = line
            .split_once(':')
            .ok_or_else(|| bad(format!("bad header line {line:?}")))?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
}

fn read_body<R: Read>(
    r: &mut R,
    headers: &[(String, String)],
    to_eof: bool,
) -> io::Result<Vec<u8>> {
    let len = headers.iter().find(|(k, _)| k == "content-length");
    let mut body = Vec::new();
    match len {
        Some((_, v)) => {
            let n: usize = v.parse().map_err(|_| bad("bad Content-Length"))?;
            if n > MAX_BODY {
                return Err(bad("body too large"));
            }
            body.resize(n, 0);
            r.read_exact(&mut body)?;
        }
        None if to_eof => {
            r.take(MAX_BODY as u64).read_to_end(&mut body)?;
        }
        None => {}
    }
    Ok(body)
}

/// Reads one request.
pub fn read_request<R: Read>(r: R) -> io::Result<Request> {
    let mut r = BufReader::new(r);
    let (first, headers) = read_head(&mut r)?;
    let mut parts = first.split(' ');
    let (Some(method), Some(path), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(bad(format!("bad request line {first:?}")));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(bad(format!("unsupported version {version:?}")));
    }
    if headers.iter().any(|(k, _)| k == "transfer-encoding") {
        return Err(bad(
            "Transfer-Encoding is not supported; send Content-Length",
        ));
    }
    let body = read_body(&mut r, &headers, false)?;
    Ok(Request {
        method: method.to_owned(),
        path: path.to_owned(),
        headers,
        body,
    })
}

/// The reason phrase of the status codes the endpoint answers with.
fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        _ => "Error",
    }
}

/// Writes one JSON answer.
pub fn write_response<W: Write>(mut w: W, code: u16, body: &[u8]) -> io::Result<()> {
    write!(
        w,
        "HTTP/1.1 {code} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(code),
        body.len()
    )?;
    w.write_all(body)?;
    w.flush()
}

/// Writes one request (the `host` and extra headers as given).
pub fn write_request<W: Write>(mut w: W, req: &Request, host: &str) -> io::Result<()> {
    let mut head = format!("{} {} HTTP/1.1\r\nHost: {host}\r\n", req.method, req.path);
    for (k, v) in &req.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        req.body.len()
    ));
    w.write_all(head.as_bytes())?;
    w.write_all(&req.body)?;
    w.flush()
}

/// Reads one answer: the status code and the body.
pub fn read_response<R: Read>(r: R) -> io::Result<(u16, Vec<u8>)> {
    let mut r = BufReader::new(r);
    let (first, headers) = read_head(&mut r)?;
    let code = first
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| bad(format!("bad status line {first:?}")))?;
    let body = read_body(&mut r, &headers, true)?;
    Ok((code, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_and_an_answer_round_trip() {
        let req = Request {
            method: "POST".into(),
            path: "/answer".into(),
            headers: vec![("abm-nonce".into(), "abc".into())],
            body: br#"{"id":1}"#.to_vec(),
        };
        let mut buf = Vec::new();
        write_request(&mut buf, &req, "127.0.0.1:9").unwrap();
        let back = read_request(&buf[..]).unwrap();
        assert_eq!(back.method, "POST");
        assert_eq!(back.path, "/answer");
        assert_eq!(back.header("abm-nonce"), Some("abc"));
        assert_eq!(back.header("host"), Some("127.0.0.1:9"));
        assert_eq!(back.body, req.body);
        let mut out = Vec::new();
        write_response(&mut out, 401, b"{}").unwrap();
        assert_eq!(read_response(&out[..]).unwrap(), (401, b"{}".to_vec()));
        assert!(read_request(&b"GARBAGE\r\n\r\n"[..]).is_err());
        let huge = format!("GET / HTTP/1.1\r\nx: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert!(read_request(huge.as_bytes()).is_err());
    }
}
