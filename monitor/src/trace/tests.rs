use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hmac::Mac as _;
use sha2::Digest as _;

use super::*;
use crate::record::{text_fields, Op};

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

fn header() -> Header {
    let mut extra = serde_json::Map::new();
    extra.insert("target".into(), "agent-1".into());
    Header {
        schema: SCHEMA,
        monitor_version: "0.1.0".into(),
        host: "build-host".into(),
        kernel: "6.8.0".into(),
        backends: vec!["tracepoint".into(), "lsm".into()],
        policy_digest: "sha256:0f0f".into(),
        command: vec!["bash".into(), "-c".into(), "rm -rf build".into()],
        workspace: "/home/dev/project".into(),
        start_time: "2025-06-01T12:00:00Z".into(),
        extra,
    }
}

fn action(op: Op, i: u64) -> Action {
    let mut a = sample_action(i);
    a.op = Some(op);
    a.syscall = match op {
        Op::Rename => "renameat2",
        Op::Write => "openat",
        Op::Exec => "execve",
        _ => "unlinkat",
    }
    .into();
    a
}

thread_local! {
    /// The form the helpers write in (each test runs on its own thread).
    static FORM: std::cell::Cell<TraceFormat> = const { std::cell::Cell::new(TraceFormat::Jsonl) };
}

fn form() -> TraceFormat {
    FORM.with(|f| f.get())
}

fn with_form(f: TraceFormat, test: fn()) {
    FORM.with(|c| c.set(f));
    test();
}

/// Runs a test (a plain fn of the same name) once per form: the records
/// are the same, so every diagnosis must be too.
macro_rules! both_forms {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn jsonl() {
                super::with_form(super::TraceFormat::Jsonl, super::$name);
            }
            #[test]
            fn compact() {
                super::with_form(super::TraceFormat::Compact, super::$name);
            }
        }
    )*};
}

both_forms!(
    intact_trace_verifies_with_counts,
    keyed_trace_authenticates_with_its_key,
    read_trace_round_trips_records_including_non_utf8_paths,
    flipped_byte_is_reported_as_modified,
    flipped_byte_breaking_json_is_still_called_modified,
    deleted_line_is_reported_as_missing,
    deleted_header_is_reported_as_missing,
    swapped_lines_are_reported_as_reordered,
    duplicated_line_is_reported,
    inserted_line_is_detected,
    truncation_at_line_boundary_is_unsealed,
    line_appended_after_seal_is_reported,
    forged_seal_is_reported,
    wrong_key_is_reported,
    keyed_trace_without_key_cannot_be_authenticated,
    unkeyed_trace_with_key_is_rejected,
    edits_rechained_without_the_key_fail_on_keyed_traces,
    dropped_writer_after_flush_verifies_as_unsealed,
    records_are_not_in_the_file_before_flush,
    ktime_regressions_are_recorded_not_rejected,
    seal_reconciles_losses_counted_by_the_run_loop,
);

/// `flush`, and in the compact form also wait for the packing thread: a
/// flush only hands the records to it.
fn flushed(w: &mut TraceWriter) {
    w.flush().unwrap();
    if form() == TraceFormat::Compact {
        w.sync().unwrap();
    }
}

fn create(path: &Path, key: Option<&[u8]>) -> TraceWriter {
    TraceWriter::create_as(path, key.map(<[u8]>::to_vec), header(), form()).unwrap()
}

/// Events with seq 1..=5, a loss (seq 6), a note (seq 7), seal (seq 8).
fn write_sample(dir: &Path, name: &str, key: Option<&[u8]>) -> (PathBuf, SealSummary) {
    let path = dir.join(name);
    let mut w = create(&path, key);
    let ops = [Op::Unlink, Op::Unlink, Op::Rename, Op::Write, Op::Exec];
    for (i, op) in ops.into_iter().enumerate() {
        let seq = w.append_event(&action(op, i as u64)).unwrap();
        assert_eq!(seq, i as u64 + 1);
    }
    w.append_loss(&Loss {
        cause: "ringbuf_full".into(),
        count: 3,
        cpu: Some(1),
        window_start_ns: 1_000_000_000,
        window_end_ns: 1_000_004_000,
    })
    .unwrap();
    w.append_note("denial", serde_json::json!({"seq": 3, "rule": "no-rm-rf"}))
        .unwrap();
    let summary = w
        .seal(SealInfo {
            end_time: "2025-06-01T12:00:05Z".into(),
            lost_by_cause: BTreeMap::from([("ringbuf_full".into(), 3)]),
            exit_code: Some(0),
        })
        .unwrap();
    (path, summary)
}

/// The canonical lines of a trace in either form.
fn lines(path: &Path) -> Vec<String> {
    let (text, end) = read_canonical(path).unwrap();
    assert_eq!(end, None);
    let text = String::from_utf8(text).unwrap();
    assert!(text.ends_with('\n'));
    text.lines().map(str::to_owned).collect()
}

/// Replaces a trace by these canonical lines, in the form of the test (as
/// someone who edits the records and writes the file again would).
fn write_lines(path: &Path, lines: &[String]) {
    let mut s = lines.join("\n");
    s.push('\n');
    std::fs::write(path, to_form(s.into_bytes())).unwrap();
}

fn to_form(text: Vec<u8>) -> Vec<u8> {
    match form() {
        TraceFormat::Jsonl => text,
        TraceFormat::Compact => {
            let mut z = compact::compressor().unwrap();
            let mut out = Vec::new();
            compact::pack_lines(&text, 1, 1 << 20, &mut z, &mut out).unwrap();
            out
        }
    }
}

/// An independent implementation of the documented rule: the digest covers
/// the raw previous digest, then the line up to `,"hash":"`.
fn doc_digest(key: Option<&[u8]>, prev_hex: &str, prefix: &str) -> String {
    let prev = hex::decode(prev_hex).unwrap();
    match key {
        None => {
            let mut h = sha2::Sha256::new();
            h.update(&prev);
            h.update(prefix.as_bytes());
            hex::encode(h.finalize())
        }
        Some(k) => {
            let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(k).unwrap();
            m.update(&prev);
            m.update(prefix.as_bytes());
            hex::encode(m.finalize().into_bytes())
        }
    }
}

fn prefix_of(line: &str) -> &str {
    let at = line.rfind(",\"hash\":\"").unwrap();
    &line[..at]
}

fn prev_of(line: &str) -> String {
    let at = line.find("\"prev\":\"").unwrap() + 8;
    line[at..at + 64].to_owned()
}

/// Re-chains lines from index `from` on as a forger without the key would:
/// fixes each `prev` and recomputes each digest with `key` (None = SHA-256).
fn rechain(lines: &mut [String], from: usize, key: Option<&[u8]>) {
    for i in from..lines.len() {
        let prev = if i == 0 {
            "0".repeat(64)
        } else {
            let l = &lines[i - 1];
            l[l.len() - 66..l.len() - 2].to_owned()
        };
        let old_prev = prev_of(&lines[i]);
        let prefix = prefix_of(&lines[i]).replacen(
            &format!("\"prev\":\"{old_prev}\""),
            &format!("\"prev\":\"{prev}\""),
            1,
        );
        let digest = doc_digest(key, &prev, &prefix);
        lines[i] = format!("{prefix},\"hash\":\"{digest}\"}}");
    }
}

fn problem(r: &VerifyReport) -> &Problem {
    r.first_bad.as_ref().expect("a problem is reported")
}

fn intact_trace_verifies_with_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (path, summary) = write_sample(dir.path(), "t.jsonl", None);
    assert_eq!(summary.records, 9);
    assert_eq!(summary.events, 5);

    let r = verify(&path, None).unwrap();
    assert_eq!(r.status, VerifyStatus::Intact, "{:?}", r.first_bad);
    assert_eq!(r.exit_code(), EXIT_INTACT);
    assert_eq!(r.authentication, Authentication::Unkeyed);
    assert_eq!(r.records, 9);
    assert_eq!(r.events, 5);
    assert_eq!(r.loss_records, 1);
    assert_eq!(r.lost, BTreeMap::from([("ringbuf_full".to_string(), 3)]));
    assert_eq!(
        r.events_by_op,
        BTreeMap::from([
            ("exec".to_string(), 1),
            ("rename".to_string(), 1),
            ("unlink".to_string(), 2),
            ("write".to_string(), 1),
        ])
    );
    assert_eq!(r.notes_by_kind, BTreeMap::from([("denial".to_string(), 1)]));
    assert_eq!(
        r.final_digest.as_deref(),
        Some(summary.final_digest.as_str())
    );
    assert_eq!(r.header.as_ref().unwrap().command[2], "rm -rf build");
    let seal = r.seal.as_ref().unwrap();
    assert_eq!((seal.records, seal.events, seal.exit_code), (8, 5, Some(0)));
    assert_eq!(r.ktime_span_ns, Some((1_000_000_000, 1_000_004_000)));

    let text = render(&path, &r);
    assert!(text.contains("status: INTACT"), "{text}");
    assert!(
        text.contains("events by op: exec 1, rename 1, unlink 2, write 1"),
        "{text}"
    );
    assert!(text.contains("lost: ringbuf_full 3"), "{text}");
    assert!(text.contains("command: bash -c rm -rf build"), "{text}");
    assert!(text.contains("backends: tracepoint, lsm"), "{text}");
    assert!(text.contains(&summary.final_digest), "{text}");
}

fn keyed_trace_authenticates_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", Some(KEY));
    let first = &lines(&path)[0];
    assert!(first.contains("\"chain\":\"hmac-sha256\""), "{first}");
    assert!(
        first.contains(&format!("\"key_id\":\"{}\"", key_id(KEY))),
        "{first}"
    );
    let r = verify(&path, Some(KEY)).unwrap();
    assert_eq!(r.status, VerifyStatus::Intact, "{:?}", r.first_bad);
    assert_eq!(
        r.authentication,
        Authentication::Authenticated {
            key_id: key_id(KEY)
        }
    );
    assert_eq!(r.exit_code(), 0);
}

#[test]
fn lines_follow_the_documented_layout_and_hash_rule() {
    for key in [None, Some(KEY)] {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = write_sample(dir.path(), "t.jsonl", key);
        let ls = lines(&path);
        let mut prev = "0".repeat(64);
        for (i, l) in ls.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["seq"], i as u64);
            assert_eq!(v["prev"], prev.as_str());
            let ty = v["type"].as_str().unwrap();
            assert!(l.starts_with(&format!(
                "{{\"type\":\"{ty}\",\"seq\":{i},\"prev\":\"{prev}\""
            )));
            let digest = doc_digest(key, &prev, prefix_of(l));
            assert_eq!(v["hash"], digest.as_str(), "line {}", i + 1);
            assert!(l.ends_with(&format!(",\"hash\":\"{digest}\"}}")));
            prev = digest;
        }
        let seal: serde_json::Value = serde_json::from_str(ls.last().unwrap()).unwrap();
        assert_eq!(seal["type"], "seal");
        assert_eq!(seal["final_digest"], prev_of(ls.last().unwrap()).as_str());
        // Events are flattened: Action fields at top level.
        let ev: serde_json::Value = serde_json::from_str(&ls[1]).unwrap();
        assert_eq!(ev["syscall"], "unlinkat");
        assert_eq!(ev["verdict"]["rule"], "workspace-delete");
    }
}

fn read_trace_round_trips_records_including_non_utf8_paths() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut a = action(Op::Unlink, 7);
    let (p, b64) = text_fields(b"/home/dev/project/caf\xe9\n.txt");
    a.path = Some(p);
    a.path_b64 = b64;
    let mut w = create(&path, None);
    w.append_event(&a).unwrap();
    w.append_note("warning", serde_json::json!("late")).unwrap();
    w.seal(SealInfo::default()).unwrap();

    let recs = read_trace(&path).unwrap();
    assert_eq!(recs.len(), 4);
    let TraceRecord::Header(h) = &recs[0] else {
        panic!("first record is the header")
    };
    assert_eq!(h.chain, ChainAlg::Sha256);
    assert_eq!(h.workspace, "/home/dev/project");
    assert_eq!(h.extra["target"], "agent-1");
    assert_eq!(
        recs[1],
        TraceRecord::Event {
            seq: 1,
            action: a.clone()
        }
    );
    assert_eq!(
        recs[2],
        TraceRecord::Note {
            seq: 2,
            kind: "warning".into(),
            body: serde_json::json!("late")
        }
    );
    let TraceRecord::Seal { seq: 3, seal } = &recs[3] else {
        panic!("last record is the seal: {:?}", recs[3])
    };
    assert_eq!(seal.records, 3);
    // The raw line escapes the newline and carries the exact bytes.
    let ev = &lines(&path)[1];
    assert!(ev.contains("caf\u{fffd}\\n.txt"), "{ev}");
    assert!(ev.contains("\"path_b64\":"), "{ev}");
    assert_eq!(verify(&path, None).unwrap().status, VerifyStatus::Intact);
}

fn flipped_byte_is_reported_as_modified() {
    for key in [None, Some(KEY)] {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = write_sample(dir.path(), "t.jsonl", key);
        let mut ls = lines(&path);
        ls[3] = ls[3].replacen("module_2", "module_3", 1);
        write_lines(&path, &ls);
        let r = verify(&path, key).unwrap();
        assert_eq!(r.status, VerifyStatus::Broken { intact_records: 3 });
        let p = problem(&r);
        assert_eq!((p.kind, p.line, p.seq), (ProblemKind::Modified, 4, Some(3)));
        assert_eq!(r.exit_code(), EXIT_BROKEN);
    }
}

fn flipped_byte_breaking_json_is_still_called_modified() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let mut ls = lines(&path);
    ls[2] = ls[2].replacen("\"comm\":\"rm\"", "\"comm\":\"rm\"\"", 1);
    write_lines(&path, &ls);
    let r = verify(&path, None).unwrap();
    let p = problem(&r);
    assert_eq!((p.kind, p.line, p.seq), (ProblemKind::Modified, 3, Some(2)));
}

// JSON lines only: a digest that is not 64 hex digits cannot be stored in
// the compact form (it keeps the digest's 32 bytes).
#[test]
fn modified_hash_field_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let mut ls = lines(&path);
    let l = &mut ls[5];
    let n = l.len();
    l.replace_range(n - 4..n - 3, "G");
    write_lines(&path, &ls);
    let p = problem(&verify(&path, None).unwrap()).clone();
    assert_eq!((p.kind, p.line), (ProblemKind::Modified, 6));
}

fn deleted_line_is_reported_as_missing() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let mut ls = lines(&path);
    ls.remove(2); // seq 2
    write_lines(&path, &ls);
    let r = verify(&path, None).unwrap();
    assert_eq!(r.status, VerifyStatus::Broken { intact_records: 2 });
    let p = problem(&r);
    assert_eq!((p.kind, p.line, p.seq), (ProblemKind::Missing, 3, Some(3)));
    assert!(p.detail.contains("seq 2"), "{}", p.detail);
}

fn deleted_header_is_reported_as_missing() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let mut ls = lines(&path);
    ls.remove(0);
    write_lines(&path, &ls);
    let r = verify(&path, None).unwrap();
    let p = problem(&r);
    assert_eq!((p.kind, p.line, p.seq), (ProblemKind::Missing, 1, Some(1)));
    assert!(p.detail.contains("the header"), "{}", p.detail);
    assert_eq!(r.authentication, Authentication::Unknown);
}

fn swapped_lines_are_reported_as_reordered() {
    for key in [None, Some(KEY)] {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = write_sample(dir.path(), "t.jsonl", key);
        let mut ls = lines(&path);
        ls.swap(2, 4);
        write_lines(&path, &ls);
        let r = verify(&path, key).unwrap();
        let p = problem(&r);
        assert_eq!(
            (p.kind, p.line, p.seq),
            (ProblemKind::Reordered, 3, Some(4))
        );
        assert!(p.detail.contains("seq 2 is at line 5"), "{}", p.detail);
    }
}

fn duplicated_line_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let mut ls = lines(&path);
    let copy = ls[2].clone();
    ls.insert(3, copy);
    write_lines(&path, &ls);
    let p = problem(&verify(&path, None).unwrap()).clone();
    assert_eq!(
        (p.kind, p.line, p.seq),
        (ProblemKind::Duplicated, 4, Some(2))
    );
    assert!(p.detail.contains("line 3"), "{}", p.detail);
}

fn inserted_line_is_detected() {
    // Unkeyed: the forger chains the new line correctly, so the next original
    // record reveals the insertion by its repeated seq.
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let mut ls = lines(&path);
    let forged = ls[3].replacen("module_2", "module_9", 1);
    ls.insert(3, forged);
    rechain(&mut ls, 3, None);
    ls.truncate(4);
    let mut rest = lines(&path)[3..].to_vec();
    ls.append(&mut rest);
    write_lines(&path, &ls);
    let p = problem(&verify(&path, None).unwrap()).clone();
    assert_eq!(
        (p.kind, p.line, p.seq),
        (ProblemKind::Duplicated, 5, Some(3))
    );

    // Keyed: the forged line itself fails.
    let (path, _) = write_sample(dir.path(), "k.jsonl", Some(KEY));
    let mut ls = lines(&path);
    let forged = ls[3].replacen("module_2", "module_9", 1);
    ls.insert(3, forged);
    rechain(&mut ls, 3, None);
    write_lines(&path, &ls);
    let p = problem(&verify(&path, Some(KEY)).unwrap()).clone();
    assert_eq!((p.kind, p.line, p.seq), (ProblemKind::Modified, 4, Some(3)));
}

#[test]
fn truncation_mid_line_is_unsealed_with_intact_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let text = std::fs::read(&path).unwrap();
    let ls = lines(&path);
    let keep: usize = ls[..5].iter().map(|l| l.len() + 1).sum::<usize>() + ls[5].len() / 2;
    std::fs::write(&path, &text[..keep]).unwrap();
    let r = verify(&path, None).unwrap();
    assert_eq!(r.status, VerifyStatus::Unsealed { intact_records: 5 });
    assert_eq!(
        r.truncated_tail,
        Some(TruncatedTail {
            line: 6,
            bytes: (ls[5].len() / 2) as u64,
            block_offset: None,
            block_len: None,
        })
    );
    assert_eq!(r.first_bad, None);
    assert_eq!(r.exit_code(), EXIT_UNSEALED);
    let text = render(&path, &r);
    assert!(text.contains("UNSEALED"), "{text}");
    assert!(text.contains("line 6 is incomplete"), "{text}");
    // read_trace skips the incomplete line too.
    assert_eq!(read_trace(&path).unwrap().len(), 5);
}

fn truncation_at_line_boundary_is_unsealed() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let mut ls = lines(&path);
    ls.truncate(7);
    write_lines(&path, &ls);
    let r = verify(&path, None).unwrap();
    assert_eq!(r.status, VerifyStatus::Unsealed { intact_records: 7 });
    assert_eq!(r.truncated_tail, None);
    assert_eq!(r.events, 5);
    assert_eq!(r.exit_code(), 2);
}

fn line_appended_after_seal_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let mut ls = lines(&path);
    let forged = ls[1].replacen("\"seq\":1,", "\"seq\":9,", 1);
    ls.push(forged);
    rechain(&mut ls, 9, None);
    write_lines(&path, &ls);
    let r = verify(&path, None).unwrap();
    assert_eq!(r.status, VerifyStatus::Broken { intact_records: 9 });
    let p = problem(&r);
    assert_eq!(
        (p.kind, p.line, p.seq),
        (ProblemKind::AfterSeal, 10, Some(9))
    );

    // Also a partial line (a partial block) after the seal.
    let ls = lines(&path);
    let mut text = to_form((ls[..9].join("\n") + "\n").into_bytes());
    let mut extra = to_form((ls[9].clone() + "\n").into_bytes());
    extra.truncate(extra.len() / 2);
    text.extend_from_slice(&extra);
    std::fs::write(&path, &text).unwrap();
    let p = problem(&verify(&path, None).unwrap()).clone();
    assert_eq!((p.kind, p.line), (ProblemKind::AfterSeal, 10));
}

fn forged_seal_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let mut ls = lines(&path);
    ls[8] = ls[8].replacen("\"events\":5", "\"events\":4", 1);
    rechain(&mut ls, 8, None);
    write_lines(&path, &ls);
    let r = verify(&path, None).unwrap();
    let p = problem(&r);
    assert_eq!(
        (p.kind, p.line, p.seq),
        (ProblemKind::ForgedSeal, 9, Some(8))
    );
    assert!(p.detail.contains("4 events"), "{}", p.detail);

    // A seal hiding deleted events: drop an event, renumber and rechain.
    let (path, _) = write_sample(dir.path(), "u.jsonl", None);
    let mut ls = lines(&path);
    ls.remove(5);
    for (i, l) in ls.iter_mut().enumerate().skip(5) {
        *l = l.replacen(&format!("\"seq\":{},", i + 1), &format!("\"seq\":{i},"), 1);
    }
    rechain(&mut ls, 5, None);
    write_lines(&path, &ls);
    let p = problem(&verify(&path, None).unwrap()).clone();
    assert_eq!((p.kind, p.line), (ProblemKind::ForgedSeal, 8));
    assert!(
        p.detail
            .contains("counts 8 records before it, the trace has 7"),
        "{}",
        p.detail
    );
}

fn wrong_key_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", Some(KEY));
    let r = verify(&path, Some(b"another key")).unwrap();
    assert_eq!(r.status, VerifyStatus::Broken { intact_records: 0 });
    let p = problem(&r);
    assert_eq!((p.kind, p.line), (ProblemKind::WrongKey, 1));
    assert!(p.detail.contains(&key_id(KEY)), "{}", p.detail);
    assert_eq!(r.exit_code(), 1);
}

fn keyed_trace_without_key_cannot_be_authenticated() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", Some(KEY));
    let r = verify(&path, None).unwrap();
    assert_eq!(r.status, VerifyStatus::Intact);
    assert_eq!(
        r.authentication,
        Authentication::KeyNotGiven {
            key_id: key_id(KEY)
        }
    );
    assert_eq!(r.exit_code(), EXIT_UNAUTHENTICATED);
    let text = render(&path, &r);
    assert!(text.contains("status: NOT AUTHENTICATED"), "{text}");
    assert!(!text.contains("INTACT"), "{text}");

    // Structure is still checked without the key.
    let mut ls = lines(&path);
    ls.remove(3);
    write_lines(&path, &ls);
    let r = verify(&path, None).unwrap();
    assert_eq!(problem(&r).kind, ProblemKind::Missing);
    assert_eq!(r.exit_code(), EXIT_BROKEN);
}

fn unkeyed_trace_with_key_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let r = verify(&path, Some(KEY)).unwrap();
    let p = problem(&r);
    assert_eq!((p.kind, p.line), (ProblemKind::NotKeyed, 1));
    assert!(p.detail.contains("not keyed"), "{}", p.detail);
    assert_eq!(r.exit_code(), 1);
}

fn edits_rechained_without_the_key_fail_on_keyed_traces() {
    let dir = tempfile::tempdir().unwrap();
    // Keep the keyed header, edit an event and rechain with SHA-256.
    let (path, _) = write_sample(dir.path(), "t.jsonl", Some(KEY));
    let mut ls = lines(&path);
    ls[2] = ls[2].replacen("module_1", "module_7", 1);
    rechain(&mut ls, 2, None);
    write_lines(&path, &ls);
    let r = verify(&path, Some(KEY)).unwrap();
    let p = problem(&r);
    assert_eq!((p.kind, p.line, p.seq), (ProblemKind::Modified, 3, Some(2)));
    assert!(p.detail.contains("HMAC"), "{}", p.detail);
    // Rechained with a guessed key: same.
    let (path, _) = write_sample(dir.path(), "g.jsonl", Some(KEY));
    let mut ls = lines(&path);
    ls[2] = ls[2].replacen("module_1", "module_7", 1);
    rechain(&mut ls, 2, Some(b"guess"));
    write_lines(&path, &ls);
    assert_eq!(
        problem(&verify(&path, Some(KEY)).unwrap()).kind,
        ProblemKind::Modified
    );

    // Rewrite the whole trace as unkeyed.
    let (path, _) = write_sample(dir.path(), "u.jsonl", Some(KEY));
    let mut ls = lines(&path);
    ls[0] = ls[0]
        .replacen("\"chain\":\"hmac-sha256\"", "\"chain\":\"sha256\"", 1)
        .replacen(&format!(",\"key_id\":\"{}\"", key_id(KEY)), "", 1);
    ls[2] = ls[2].replacen("module_1", "module_7", 1);
    rechain(&mut ls, 0, None);
    // The seal's final_digest must follow too, or it is a forged seal.
    let last = ls.len() - 1;
    let old = ls[last].clone();
    let fd_at = old.find("\"final_digest\":\"").unwrap() + 16;
    let new_prev = prev_of(&old);
    ls[last] = format!("{}{}{}", &old[..fd_at], new_prev, &old[fd_at + 64..]);
    rechain(&mut ls, last, None);
    write_lines(&path, &ls);
    let r = verify(&path, Some(KEY)).unwrap();
    assert_eq!(problem(&r).kind, ProblemKind::NotKeyed);
    assert_eq!(r.exit_code(), 1);
    // Without the key the rewrite is a consistent unkeyed trace, and the
    // report says that it is unkeyed, never that it is authenticated.
    let r = verify(&path, None).unwrap();
    assert_eq!(r.status, VerifyStatus::Intact, "{:?}", r.first_bad);
    assert_eq!(r.authentication, Authentication::Unkeyed);
}

fn dropped_writer_after_flush_verifies_as_unsealed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut w = create(&path, Some(KEY));
    for i in 0..10 {
        w.append_event(&action(Op::Write, i)).unwrap();
    }
    flushed(&mut w);
    assert_eq!(w.records_written(), 11);
    assert_eq!(w.path(), path.as_path());
    let r = verify(&path, Some(KEY)).unwrap();
    assert_eq!(r.status, VerifyStatus::Unsealed { intact_records: 11 });
    // Appended after the flush, then dropped: Drop writes the buffer.
    w.append_event(&action(Op::Write, 10)).unwrap();
    drop(w);
    let r = verify(&path, Some(KEY)).unwrap();
    assert_eq!(r.status, VerifyStatus::Unsealed { intact_records: 12 });
    assert_eq!(r.events, 11);
    assert_eq!(r.seal, None);
}

fn records_are_not_in_the_file_before_flush() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut w = create(&path, None);
    assert_eq!(lines(&path).len(), 1, "the header is written at once");
    w.append_event(&action(Op::Unlink, 0)).unwrap();
    assert_eq!(lines(&path).len(), 1);
    flushed(&mut w);
    assert_eq!(lines(&path).len(), 2);
    std::mem::forget(w); // a crash: nothing more is written
    assert_eq!(
        verify(&path, None).unwrap().status,
        VerifyStatus::Unsealed { intact_records: 2 }
    );
}

#[test]
fn create_refuses_existing_traces_and_uses_mode_0600() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let before = std::fs::read(&path).unwrap();
    let err = TraceWriter::create(&path, None, header()).unwrap_err();
    assert!(matches!(err, TraceError::Exists { .. }), "{err}");
    assert!(err.to_string().contains("refusing to overwrite"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // An empty file (mktemp) is taken over and made private.
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, b"").unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o644)).unwrap();
    TraceWriter::create(&empty, None, header()).unwrap();
    let mode = std::fs::metadata(&empty).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // Symbolic links are not followed.
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(dir.path().join("elsewhere"), &link).unwrap();
    let err = TraceWriter::create(&link, None, header()).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(!dir.path().join("elsewhere").exists());

    assert!(matches!(
        TraceWriter::create(&dir.path().join("k.jsonl"), Some(vec![]), header()),
        Err(TraceError::EmptyKey)
    ));
    let mut h = header();
    h.schema = 99;
    assert!(matches!(
        TraceWriter::create(&dir.path().join("s.jsonl"), None, h),
        Err(TraceError::Schema(99))
    ));
}

#[test]
fn read_key_rejects_empty_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("key");
    std::fs::write(&p, b"").unwrap();
    let err = read_key(&p).unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
    assert!(read_key(&dir.path().join("none")).is_err());
    std::fs::write(&p, KEY).unwrap();
    assert_eq!(read_key(&p).unwrap(), KEY);
}

fn ktime_regressions_are_recorded_not_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut w = create(&path, None);
    for k in [10, 30, 20, 40] {
        let mut a = action(Op::Unlink, 0);
        a.ktime_ns = k;
        w.append_event(&a).unwrap();
    }
    w.seal(SealInfo::default()).unwrap();
    let r = verify(&path, None).unwrap();
    assert_eq!(r.status, VerifyStatus::Intact);
    assert_eq!(r.ktime_regressions, 1);
    assert_eq!(r.seal.unwrap().ktime_regressions, 1);
    assert_eq!(r.ktime_span_ns, Some((10, 40)));
}

fn seal_reconciles_losses_counted_by_the_run_loop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut w = create(&path, None);
    w.append_event(&action(Op::Unlink, 0)).unwrap();
    w.append_loss(&Loss {
        cause: "ringbuf_full".into(),
        count: 2,
        cpu: Some(0),
        window_start_ns: 5,
        window_end_ns: 6,
    })
    .unwrap();
    let s = w
        .seal(SealInfo {
            end_time: "2025-06-01T12:00:05Z".into(),
            lost_by_cause: BTreeMap::from([
                ("ringbuf_full".into(), 5),
                ("reorder_window".into(), 1),
            ]),
            exit_code: None,
        })
        .unwrap();
    let want = BTreeMap::from([
        ("reorder_window".to_string(), 1),
        ("ringbuf_full".to_string(), 5),
    ]);
    assert_eq!(s.lost_by_cause, want);
    let r = verify(&path, None).unwrap();
    assert_eq!(r.status, VerifyStatus::Intact, "{:?}", r.first_bad);
    assert_eq!(r.lost, want);
    assert_eq!(r.loss_records, 3);
    let extra: Vec<Loss> = read_trace(&path)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            TraceRecord::Loss { loss, .. } if loss.cpu.is_none() => Some(loss),
            _ => None,
        })
        .collect();
    assert_eq!(extra.len(), 2);
    assert_eq!(extra[1].cause, "ringbuf_full");
    assert_eq!(extra[1].count, 3);
}

#[test]
fn empty_or_partial_header_is_no_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    std::fs::write(&path, b"").unwrap();
    let r = verify(&path, None).unwrap();
    assert_eq!(problem(&r).kind, ProblemKind::NoHeader);
    assert_eq!(r.exit_code(), 1);
    std::fs::write(&path, b"{\"type\":\"header\",\"seq\":0,").unwrap();
    assert_eq!(
        problem(&verify(&path, None).unwrap()).kind,
        ProblemKind::NoHeader
    );
    assert!(verify(&dir.path().join("missing"), None).is_err());
}

#[test]
fn not_a_trace_is_malformed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    std::fs::write(&path, b"{\"op\":\"unlink\"}\n").unwrap();
    let r = verify(&path, None).unwrap();
    let p = problem(&r);
    assert_eq!((p.kind, p.line), (ProblemKind::Malformed, 1));
    let err = read_trace(&path).unwrap_err();
    assert!(err.to_string().contains(":1:"), "{err}");
}

#[test]
fn throughput_helper_reports_positive_rates() {
    let (sha, hmac) = hashing_throughput(200);
    assert!(sha > 0.0 && hmac > 0.0);
}

#[test]
fn every_single_byte_flip_is_detected_at_its_line() {
    for key in [None, Some(KEY)] {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = write_sample(dir.path(), "t.jsonl", key);
        let orig = std::fs::read(&path).unwrap();
        let mut kinds = BTreeMap::new();
        for i in 0..orig.len() {
            let mut b = orig.clone();
            b[i] ^= 0x01;
            let src = TraceReader::from_reader(Box::new(std::io::Cursor::new(b)), &path).unwrap();
            let r = super::verify::verify_source(src, key, None).unwrap();
            let line = 1 + orig[..i].iter().filter(|&&c| c == b'\n').count() as u64;
            assert_ne!(
                r.status,
                VerifyStatus::Intact,
                "flip at byte {i} (line {line}) undetected"
            );
            if i == orig.len() - 1 {
                // The seal's newline: the seal becomes an incomplete line.
                assert_eq!(r.status, VerifyStatus::Unsealed { intact_records: 8 });
                continue;
            }
            let p = problem(&r);
            assert_eq!(p.line, line, "flip at byte {i}: {p}");
            *kinds.entry(p.kind).or_insert(0) += 1;
        }
        // Everything is an edit, except that a changed key id in a keyed
        // header is first seen as the wrong key.
        assert!(
            kinds[&ProblemKind::Modified] > orig.len() * 9 / 10,
            "{kinds:?}"
        );
        assert!(
            kinds
                .keys()
                .all(|k| matches!(k, ProblemKind::Modified | ProblemKind::WrongKey)),
            "{kinds:?}"
        );
    }
}

#[test]
fn split_record_is_reported_as_modified() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_sample(dir.path(), "t.jsonl", None);
    let mut ls = lines(&path);
    ls[4] = ls[4].replacen(",\"comm\"", "\n,\"comm\"", 1);
    write_lines(&path, &ls);
    let p = problem(&verify(&path, None).unwrap()).clone();
    assert_eq!((p.kind, p.line, p.seq), (ProblemKind::Modified, 5, Some(4)));
}

/// A compact trace of three blocks: header + events 1-3, events 4-6, events
/// 7-8 and the seal (seq 9).
fn write_blocks(dir: &Path) -> (PathBuf, Vec<u64>) {
    FORM.with(|c| c.set(TraceFormat::Compact));
    let path = dir.join("t.abmt");
    let mut w = create(&path, None);
    let mut sizes = Vec::new();
    for i in 0..8 {
        w.append_event(&action(Op::Unlink, i)).unwrap();
        if i == 2 || i == 5 {
            flushed(&mut w);
            sizes.push(std::fs::metadata(&path).unwrap().len());
        }
    }
    w.seal(SealInfo::default()).unwrap();
    sizes.push(std::fs::metadata(&path).unwrap().len());
    (path, sizes)
}

#[test]
fn compact_and_jsonl_hold_the_same_canonical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for f in [TraceFormat::Jsonl, TraceFormat::Compact] {
        FORM.with(|c| c.set(f));
        let (p, summary) = write_sample(dir.path(), &format!("t.{}", f.extension()), Some(KEY));
        files.push((p, summary));
    }
    let plain = std::fs::read(&files[0].0).unwrap();
    let compact = std::fs::read(&files[1].0).unwrap();
    assert!(compact::is_compact(&compact));
    assert!(!compact::is_compact(&plain));
    assert!(compact.len() < plain.len());
    let (canonical, end) = read_canonical(&files[1].0).unwrap();
    assert_eq!(end, None);
    assert_eq!(canonical, plain, "compact -> canonical is byte-identical");
    // Same chain, same seal digest.
    assert_eq!(files[0].1.final_digest, files[1].1.final_digest);
    let (a, b) = (
        verify(&files[0].0, Some(KEY)).unwrap(),
        verify(&files[1].0, Some(KEY)).unwrap(),
    );
    assert_eq!(b.status, VerifyStatus::Intact);
    assert_eq!(b.format, Some(TraceFormat::Compact));
    assert_eq!(a.final_digest, b.final_digest);
    assert_eq!(
        read_trace(&files[0].0).unwrap(),
        read_trace(&files[1].0).unwrap()
    );
    assert_eq!(
        read_header(&files[1].0).unwrap().workspace,
        "/home/dev/project"
    );
}

#[test]
fn compact_blocks_are_one_per_flush() {
    let dir = tempfile::tempdir().unwrap();
    let (path, sizes) = write_blocks(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let mut at = 0usize;
    let mut firsts = Vec::new();
    while at < bytes.len() {
        let h = compact::BlockHeader::decode(
            bytes[at..at + compact::BLOCK_HEADER_LEN]
                .try_into()
                .unwrap(),
        )
        .unwrap();
        firsts.push((h.first_seq, h.records));
        at += compact::BLOCK_HEADER_LEN + h.zlen as usize;
    }
    assert_eq!(at, bytes.len());
    assert_eq!(firsts, vec![(0, 1), (1, 3), (4, 3), (7, 3)]);
    assert_eq!(*sizes.last().unwrap(), bytes.len() as u64);
    assert!(verify(&path, None).unwrap().is_intact());
}

#[test]
fn compact_truncated_mid_block_is_unsealed_with_intact_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let (path, sizes) = write_blocks(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    // Cut inside the last block (a crash while appending it), then inside
    // its header.
    for cut in [sizes[1] as usize + 80, sizes[1] as usize + 10] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let r = verify(&path, None).unwrap();
        assert_eq!(r.status, VerifyStatus::Unsealed { intact_records: 7 });
        let t = r.truncated_tail.clone().expect("truncated tail");
        assert_eq!((t.line, t.block_offset), (8, Some(sizes[1])));
        assert_eq!(t.bytes, (cut as u64) - sizes[1]);
        assert_eq!(r.exit_code(), EXIT_UNSEALED);
        let text = render(&path, &r);
        assert!(text.contains("the last block (at byte"), "{text}");
        // The readers skip the incomplete end.
        assert_eq!(read_trace(&path).unwrap().len(), 7);
    }
}

#[test]
fn damaged_block_names_the_records_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (path, sizes) = write_blocks(dir.path());
    let orig = std::fs::read(&path).unwrap();
    // A byte inside the compressed data of the third block (events 4-6).
    let mut b = orig.clone();
    let at = sizes[0] as usize + compact::BLOCK_HEADER_LEN + 6;
    b[at] ^= 0x40;
    std::fs::write(&path, &b).unwrap();
    let r = verify(&path, None).unwrap();
    assert_eq!(r.status, VerifyStatus::Broken { intact_records: 4 });
    let p = problem(&r);
    assert_eq!(
        (p.kind, p.line, p.seq),
        (ProblemKind::DamagedFrame, 5, Some(4))
    );
    assert!(p.detail.contains(&format!("at byte {}", sizes[0])), "{p}");
    assert!(
        p.detail
            .contains("records seq 4 to 6 (3 record(s)) cannot be read")
            && p.detail.contains("continues with seq 7"),
        "{p}"
    );
    // read_trace refuses it with the same facts; cat-style reading gets
    // the lines before it.
    let e = read_trace(&path).unwrap_err().to_string();
    assert!(e.contains("seq 4 to 6"), "{e}");
    let (text, end) = read_canonical(&path).unwrap();
    assert_eq!(text.split(|&c| c == b'\n').count() - 1, 4);
    assert!(matches!(end, Some(Next::Damaged(_))));
    // A reader can go on after the damage: the later blocks are intact.
    let mut rd = TraceReader::open(&path).unwrap();
    let mut line = Vec::new();
    let mut got = Vec::new();
    while let Some(n) = rd.next(&mut line).unwrap() {
        if n == Next::Line {
            got.push(parse_line_seq(&line));
        }
    }
    assert_eq!(got, vec![0, 1, 2, 3, 7, 8, 9]);

    // A destroyed block header: the rest of the file is lost.
    let mut b = orig.clone();
    b[sizes[0] as usize] ^= 0xff;
    std::fs::write(&path, &b).unwrap();
    let p = problem(&verify(&path, None).unwrap()).clone();
    assert_eq!(
        (p.kind, p.line, p.seq),
        (ProblemKind::DamagedFrame, 5, Some(4))
    );
    assert!(
        p.detail.contains("from seq 4 to the end of the file"),
        "{p}"
    );

    // A whole block removed: its records are missing.
    let mut b = orig[..sizes[0] as usize].to_vec();
    b.extend_from_slice(&orig[sizes[1] as usize..]);
    std::fs::write(&path, &b).unwrap();
    let p = problem(&verify(&path, None).unwrap()).clone();
    assert_eq!((p.kind, p.line, p.seq), (ProblemKind::Missing, 5, Some(7)));
}

fn parse_line_seq(line: &[u8]) -> u64 {
    read::parse_line(line).unwrap().seq()
}

/// Every single-bit flip of a compact trace either is reported or leaves
/// every record byte-identical: zstd ignores a few bits of its entropy
/// table descriptions, and such a flip changes no record (the chain covers
/// the records, not their compressed bytes).
#[test]
fn every_single_byte_flip_of_a_compact_trace_is_detected_or_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_blocks(dir.path());
    let orig = std::fs::read(&path).unwrap();
    let (canonical, _) = read_canonical(&path).unwrap();
    let flipped = dir.path().join("f.abmt");
    let mut kinds = BTreeMap::new();
    let mut harmless = 0usize;
    for i in 0..orig.len() {
        let mut b = orig.clone();
        b[i] ^= 0x01;
        std::fs::write(&flipped, &b).unwrap();
        let r = verify(&flipped, None).unwrap();
        // Every reader copes with it.
        let _ = read_trace(&flipped);
        let (got, end) = read_canonical(&flipped).unwrap();
        if r.status == VerifyStatus::Intact {
            assert_eq!(
                (got, end),
                (canonical.clone(), None),
                "flip at byte {i} changed the records undetected"
            );
            harmless += 1;
            continue;
        }
        let kind = r
            .first_bad
            .as_ref()
            .map(|p| p.kind.name())
            .unwrap_or("unsealed");
        *kinds.entry(kind).or_insert(0) += 1;
    }
    assert!(kinds["damaged frame"] > orig.len() / 2, "{kinds:?}");
    assert!(harmless * 100 < orig.len(), "{harmless} harmless flips");
}
