//! The kit's wire protocol, version 1: JSON lines on stdin (kit -> us) and stdout
//! (us -> kit); anything for humans goes to stderr.
//!
//! `start` -> `started` (or `error` and exit for another version); `run` -> exactly one
//! of `trace` / `skip` / `error` with the same `seq`; `stop` or end of input -> exit 0.
//! Input lines are bounded; a malformed line is answered with an `error` (with its
//! `seq` when one can be read), never with a panic.

use std::io::{self, BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use soo::json::{self, Value};

use crate::driver;

/// The protocol version spoken.
pub const PROTOCOL: i64 = 1;
/// The longest input line read; longer lines are skipped and answered with an error.
pub const MAX_LINE: usize = 16 * 1024 * 1024;
const CONTRACT: &str = "shell-output";

fn implementation() -> Value {
    Value::object([
        ("name", Value::from("seamspec-rust-example")),
        ("language", Value::from("rust")),
        ("version", Value::from(env!("CARGO_PKG_VERSION"))),
        ("contracts", Value::Array(vec![Value::from(CONTRACT)])),
        (
            "features",
            Value::Array(vec![Value::from("soo-process"), Value::from("soo-session")]),
        ),
        (
            "details",
            Value::object([
                ("runtime", Value::from("rust, std only")),
                (
                    "models",
                    Value::from("agent-bridle-tool-shell output observer"),
                ),
            ]),
        ),
    ])
}

enum Line {
    Text(Vec<u8>),
    TooLong(usize),
}

/// Read one line (without its `\n`), keeping at most `max` bytes; `None` at end of input.
fn read_line(input: &mut impl BufRead, max: usize) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut length = 0usize;
    let mut seen_any = false;
    loop {
        let buffer = match input.fill_buf() {
            Ok(buffer) => buffer,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buffer.is_empty() {
            return Ok(seen_any.then(|| finish_line(line, length, max)));
        }
        seen_any = true;
        let (piece, found) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (&buffer[..at], Some(at)),
            None => (buffer, None),
        };
        if length + piece.len() <= max {
            line.extend_from_slice(piece);
        }
        length += piece.len();
        let used = found.map_or(piece.len(), |at| at + 1);
        input.consume(used);
        if found.is_some() {
            return Ok(Some(finish_line(line, length, max)));
        }
        if length > max {
            line = Vec::new(); // stop holding on to a line that will be refused anyway
        }
    }
}

fn finish_line(line: Vec<u8>, length: usize, max: usize) -> Line {
    if length > max {
        Line::TooLong(length)
    } else {
        Line::Text(line)
    }
}

fn send(out: &mut impl Write, message: &Value) -> io::Result<()> {
    let mut text = message.to_json();
    text.push('\n');
    out.write_all(text.as_bytes())?;
    out.flush()
}

fn error(seq: Option<i64>, message: &str, context: Option<&str>) -> Value {
    let mut fields = vec![("type", Value::from("error"))];
    if let Some(seq) = seq {
        fields.push(("seq", Value::from(seq)));
    }
    let message = if message.is_empty() { "error" } else { message };
    fields.push(("message", Value::from(message)));
    if let Some(context) = context.filter(|c| !c.is_empty()) {
        fields.push(("context", Value::from(context)));
    }
    Value::object(fields)
}

fn emitter() -> Result<Vec<String>, String> {
    static EMITTER: OnceLock<Result<Vec<String>, String>> = OnceLock::new();
    EMITTER.get_or_init(driver::locate_emitter).clone()
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
        .unwrap_or_else(|| "a panic".to_string())
}

/// The answer to one `run`.
fn answer(seq: i64, request: &Value) -> Value {
    let contract = request
        .get("contract")
        .and_then(Value::as_str)
        .unwrap_or("");
    if contract != CONTRACT {
        return Value::object([
            ("type", Value::from("skip")),
            ("seq", Value::from(seq)),
            (
                "reason",
                Value::from(format!(
                    "this implementation does not implement the {contract:?} contract"
                )),
            ),
        ]);
    }
    match catch_unwind(AssertUnwindSafe(|| driver::perform(request, &emitter))) {
        Ok(Ok(trace)) => Value::object([
            ("type", Value::from("trace")),
            ("seq", Value::from(seq)),
            ("trace", Value::Array(trace)),
        ]),
        Ok(Err(failure)) => error(Some(seq), &failure.message, Some(&failure.context)),
        Err(payload) => error(
            Some(seq),
            &format!("the driver panicked: {}", panic_text(&*payload)),
            None,
        ),
    }
}

/// Serve the protocol until `stop` or end of input; returns the process exit code.
pub fn serve(input: &mut impl BufRead, out: &mut impl Write) -> i32 {
    loop {
        let line = match read_line(input, MAX_LINE) {
            Ok(Some(Line::Text(line))) => line,
            Ok(Some(Line::TooLong(length))) => {
                let reply = error(
                    None,
                    &format!("input line of {length} bytes is longer than {MAX_LINE}; ignored"),
                    None,
                );
                if send(out, &reply).is_err() {
                    return 1;
                }
                continue;
            }
            Ok(None) => return 0, // end of input means stop
            Err(e) => {
                eprintln!("seamspec-rust-impl: cannot read stdin: {e}");
                return 1;
            }
        };
        let reply = match handle(&line) {
            Handled::Reply(reply) => reply,
            Handled::Nothing => continue,
            Handled::Exit(code, reply) => {
                if let Some(reply) = reply {
                    let _ = send(out, &reply);
                }
                return code;
            }
        };
        if let Err(e) = send(out, &reply) {
            eprintln!("seamspec-rust-impl: cannot write stdout: {e}");
            return 1;
        }
    }
}

enum Handled {
    Reply(Value),
    Nothing,
    Exit(i32, Option<Value>),
}

fn handle(line: &[u8]) -> Handled {
    let Ok(text) = std::str::from_utf8(line) else {
        return Handled::Reply(error(None, "input line is not UTF-8", None));
    };
    if text.trim().is_empty() {
        return Handled::Nothing;
    }
    let message = match json::parse(text) {
        Ok(message) => message,
        Err(e) => {
            return Handled::Reply(error(None, &format!("input line is not JSON: {e}"), None))
        }
    };
    let seq = message.get("seq").and_then(Value::as_i64);
    match message.get("type").and_then(Value::as_str) {
        Some("start") => {
            if message.get("protocol").and_then(Value::as_i64) == Some(PROTOCOL) {
                Handled::Reply(Value::object([
                    ("type", Value::from("started")),
                    ("protocol", Value::from(PROTOCOL)),
                    ("implementation", implementation()),
                ]))
            } else {
                let got = message
                    .get("protocol")
                    .map_or_else(|| "none".into(), Value::to_json);
                Handled::Exit(
                    1,
                    Some(error(
                        None,
                        &format!("this implementation speaks protocol {PROTOCOL} only, not {got}"),
                        None,
                    )),
                )
            }
        }
        Some("run") => {
            let Some(seq) = seq.filter(|s| *s >= 1) else {
                return Handled::Reply(error(
                    None,
                    "a run message needs an integer seq >= 1",
                    None,
                ));
            };
            match message.get("request") {
                Some(request) if request.as_object().is_some() => {
                    Handled::Reply(answer(seq, request))
                }
                _ => Handled::Reply(error(
                    Some(seq),
                    "a run message needs a request object",
                    None,
                )),
            }
        }
        Some("stop") => Handled::Exit(0, None),
        Some(other) => Handled::Reply(error(
            seq.filter(|s| *s >= 1),
            &format!("unexpected message type {other:?}"),
            None,
        )),
        None => Handled::Reply(error(
            seq.filter(|s| *s >= 1),
            "a message must be an object with a string type",
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn converse(input: &str) -> (i32, Vec<Value>) {
        let mut out = Vec::new();
        let code = serve(&mut input.as_bytes(), &mut out);
        let text = String::from_utf8(out).unwrap();
        (
            code,
            text.lines().map(|l| json::parse(l).unwrap()).collect(),
        )
    }

    #[test]
    fn handshake_and_stop() {
        let (code, replies) = converse(
            "{\"type\":\"start\",\"protocol\":1,\"kit\":{}}\n{\"type\":\"stop\"}\n{\"type\":\"start\"}\n",
        );
        assert_eq!(code, 0);
        assert_eq!(replies.len(), 1);
        assert_eq!(
            replies[0].get("type").and_then(Value::as_str),
            Some("started")
        );
    }

    #[test]
    fn wrong_version_is_refused() {
        let (code, replies) = converse("{\"type\":\"start\",\"protocol\":2}\n");
        assert_eq!(code, 1);
        assert_eq!(
            replies[0].get("type").and_then(Value::as_str),
            Some("error")
        );
        assert!(replies[0].get("seq").is_none());
    }

    #[test]
    fn malformed_lines_get_errors_and_eof_stops() {
        let (code, replies) = converse(
            "not json\n\n[1]\n{\"type\":\"run\",\"seq\":3}\n{\"type\":\"run\",\"seq\":4,\"request\":{\"contract\":\"other\",\"id\":\"x\",\"given\":{},\"when\":[]}}\n\u{ff}",
        );
        assert_eq!(code, 0);
        let kinds: Vec<_> = replies
            .iter()
            .map(|r| r.get("type").and_then(Value::as_str).unwrap().to_string())
            .collect();
        assert_eq!(kinds, ["error", "error", "error", "skip", "error"]);
        assert_eq!(replies[2].get("seq"), Some(&Value::Int(3)));
        assert_eq!(replies[3].get("seq"), Some(&Value::Int(4)));
    }

    #[test]
    fn long_lines_are_bounded() {
        let mut input = io::Cursor::new(format!("{}\n{{\"type\":\"stop\"}}\n", "x".repeat(100)));
        let line = read_line(&mut input, 10).unwrap().unwrap();
        assert!(matches!(line, Line::TooLong(100)));
        let next = read_line(&mut input, 10).unwrap().unwrap();
        assert!(matches!(next, Line::TooLong(15)));
        let mut input = io::Cursor::new("abc".to_string());
        assert!(matches!(read_line(&mut input, 10).unwrap(), Some(Line::Text(t)) if t == b"abc"));
        assert!(read_line(&mut input, 10).unwrap().is_none());
    }
}
