//! `abm report` on traces of real runs (the real kernel programs, real `rm`,
//! `chmod` and an enforced denial), rendered by a real headless Chromium;
//! the assertions read the DOM Chromium produced.
mod common;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use common::{abm_run, sh, TempDir, ABM};

/// Chromium's flags for a headless run as root on an offline machine.
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--hide-scrollbars",
];

/// Runs Chromium on `page` with a fresh profile and `extra` flags; fails
/// the test when Chromium is missing (`cargo xtask test` installs it).
fn chromium(dir: &TempDir, page: &Path, extra: &[&str]) -> Output {
    let profile = dir.join(&format!(
        "chromium-profile-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let mut child = Command::new("chromium")
        .args(CHROMIUM_FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start chromium ({e}): install Debian's `chromium` (cargo xtask test does)"
            )
        });
    // Chromium prints the DOM then exits; bound it so a hang fails the test.
    let end = Instant::now() + Duration::from_secs(50);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("chromium did not finish within 50 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The DOM after the page's script ran.
fn render_dom(dir: &TempDir, page: &Path) -> String {
    let out = chromium(dir, page, &["--dump-dom", "--virtual-time-budget=5000"]);
    let dom = String::from_utf8(out.stdout).expect("the DOM is UTF-8");
    assert!(
        dom.contains("data-rendered=\"1\""),
        "the report's script did not finish rendering:\n{}",
        &dom[..dom.len().min(3000)]
    );
    dom
}

/// The inner HTML of the element whose opening tag contains `marker`, up
/// to the closing tag of the same name (no nesting of that tag assumed).
fn element<'a>(dom: &'a str, tag: &str, marker: &str) -> &'a str {
    let at = dom
        .find(marker)
        .unwrap_or_else(|| panic!("no element with {marker} in the DOM"));
    let start = dom[..at].rfind(&format!("<{tag}")).expect("opening tag");
    let end = dom[at..]
        .find(&format!("</{tag}>"))
        .map(|e| at + e)
        .expect("closing tag");
    &dom[start..end]
}

/// From the element with `marker` to the next section heading: a whole
/// section, however its elements nest.
fn section<'a>(dom: &'a str, marker: &str) -> &'a str {
    let at = dom
        .find(marker)
        .unwrap_or_else(|| panic!("no element with {marker} in the DOM"));
    let end = dom[at..].find("<h2").map_or(dom.len(), |e| at + e);
    &dom[at..end]
}

/// The text of an HTML fragment (tags removed, entities of the report
/// decoded).
fn text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The number shown in the summary box `data-count="key"`.
fn count(dom: &str, key: &str) -> u64 {
    let html = element(dom, "div", &format!("data-count=\"{key}\""));
    let b = &html[html.find("<b>").expect("count value") + 3..];
    b[..b.find("</b>").unwrap()]
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("count {key}: {e}: {html}"))
}

fn report(dir: &TempDir, traces: &[&Path], extra: &[&str]) -> (PathBuf, Output) {
    let out = dir.join(&format!(
        "report-{}.html",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let o = Command::new(ABM)
        .arg("report")
        .args(traces)
        .arg("--output")
        .arg(&out)
        .args(extra)
        .output()
        .unwrap();
    (out, o)
}

const KEEP_POLICY: &str = r#"
version = 1

[[rule]]
id = "test.deny-keep"
reason = "keep/ must not change"
paths = ["${workspace}/keep/**"]
treatment = "deny"
"#;

/// A workspace with a tree to delete, a file to chmod and a protected file.
fn workspace(tag: &str) -> TempDir {
    let ws = TempDir::new(tag);
    sh(
        "mkdir -p build/obj/deep keep && for f in a b c; do echo $f > build/obj/$f.o; done \
         && echo d > build/obj/deep/d.o && echo x > build/run.sh && echo k > keep/notes.txt",
        ws.path(),
    );
    ws
}

/// These tests need the real kernel programs: they fail, not skip, where
/// they cannot load.
fn need_kernel() {
    if let Some(why) = common::kernel_unavailable() {
        panic!("cannot run on this machine: {why}");
    }
}

#[test]
fn report_of_a_real_enforced_run_shows_deletions_and_the_blocked_action() {
    need_kernel();
    assert!(
        common::seccomp_user_notif(),
        "this kernel has no seccomp user notification, which --enforce needs"
    );
    let t = TempDir::new("report-enf");
    let ws = workspace("report-enf-ws");
    let policy = t.join("policy.toml");
    std::fs::write(&policy, KEEP_POLICY).unwrap();
    let (q, sock) = (t.s("quarantine"), t.s("ctl.sock"));
    let run = abm_run(
        &t,
        ws.path(),
        &[
            "--enforce",
            "--policy",
            policy.to_str().unwrap(),
            "--quarantine",
            &q,
            "--control-socket",
            &sock,
            "--no-prompt",
        ],
        &[
            "sh",
            "-c",
            "chmod 700 build/run.sh; rm -rf build/obj; rm keep/notes.txt; echo done",
        ],
    );
    assert!(ws.join("keep/notes.txt").exists(), "{}", run.stderr());
    assert!(!ws.join("build/obj").exists(), "{}", run.stderr());

    let (page, o) = report(&t, &[&run.trace], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let size = std::fs::metadata(&page).unwrap().len();
    let html = std::fs::read_to_string(&page).unwrap();
    for remote in ["http://", "https://", "<link", "src=\""] {
        assert!(!html.contains(remote), "the page loads {remote}");
    }
    let dom = render_dom(&t, &page);

    // Header: command, verification, policy digest, backends.
    let header = text(element(&dom, "dl", "id=\"run-header\""));
    assert!(header.contains("rm -rf build/obj"), "{header}");
    assert!(header.contains("INTACT"), "{header}");
    let digest = run.records[0]["policy_digest"].as_str().unwrap();
    assert!(header.contains(digest), "{header}");
    assert!(header.contains("seccomp"), "{header}");

    // The deleted paths, each in the path tree, with the counts.
    let obj = ws.s("build/obj");
    let deleted = [
        format!("{obj}/a.o"),
        format!("{obj}/b.o"),
        format!("{obj}/c.o"),
        format!("{obj}/deep/d.o"),
        format!("{obj}/deep"),
        obj.clone(),
    ];
    let tree = section(&dom, "id=\"paths\"");
    for p in &deleted[..4] {
        assert!(
            tree.contains(&format!("data-path=\"{p}\"")),
            "{p} not in the path tree:\n{}",
            text(tree)
        );
    }
    assert!(
        text(tree).contains("deleted 6"),
        "the tree's top shows the 6 deleted entries: {}",
        text(tree)
    );
    assert_eq!(count(&dom, "deleted"), 6);
    assert_eq!(count(&dom, "chmod"), 1);
    assert_eq!(count(&dom, "blocked"), 1);
    let events = run.events().count() as u64;
    assert_eq!(count(&dom, "events"), events);

    // The blocked action: who decided, the rule, the reason, the result.
    let decisions = element(&dom, "table", "id=\"decisions\"");
    let rows: Vec<&str> = decisions.split("<tr data-decision=").skip(1).collect();
    assert_eq!(rows.len(), 1, "{}", text(decisions));
    let row = text(rows[0]);
    for want in [
        "denied",
        "policy",
        "unlink",
        &ws.s("keep/notes.txt"),
        "test.deny-keep",
        "keep/ must not change",
        "EPERM",
        "rm",
    ] {
        assert!(
            row.contains(want),
            "{want:?} not in the decision row: {row}"
        );
    }
    // Its logical action is the `rm keep/notes.txt` program run.
    let actions = text(element(&dom, "table", "id=\"actions\""));
    assert!(actions.contains("rm keep/notes.txt"), "{actions}");
    assert!(actions.contains("rm -rf build/obj"), "{actions}");
    // The process tree shows the shell and its children with argv.
    let procs = text(section(&dom, "id=\"processes\""));
    assert!(procs.contains("rm -rf build/obj"), "{procs}");
    assert!(procs.contains("chmod 700 build/run.sh"), "{procs}");

    // A screenshot of the page (docs/report.md shows one made this way).
    let shot = t.join("report.png");
    chromium(
        &t,
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,1500",
            "--virtual-time-budget=5000",
        ],
    );
    let png = std::fs::read(&shot).expect("chromium wrote the screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 20_000);
    assert!(size < 200_000, "a small run's page is {size} bytes");
}

#[test]
fn several_runs_are_compared_and_bad_traces_are_refused() {
    need_kernel();
    let t = TempDir::new("report-cmp");
    let ws1 = workspace("report-cmp-ws1");
    let ws2 = workspace("report-cmp-ws2");
    let a = abm_run(&t, ws1.path(), &[], &["rm", "-rf", "build"]);
    let b = abm_run(&t, ws2.path(), &[], &["chmod", "600", "keep/notes.txt"]);
    assert!(a.output.status.success() && b.output.status.success());

    let (page, o) = report(&t, &[&a.trace, &b.trace], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dom = render_dom(&t, &page);
    let table = element(&dom, "table", "id=\"comparison-table\"");
    let rows: Vec<String> = table
        .split("<tr data-run=")
        .skip(1)
        .map(|r| text(&format!("<tr {r}")))
        .collect();
    assert_eq!(rows.len(), 2, "{}", text(table));
    // run, command, verify, events, deleted, rewritten, chmod, ...
    let cells = |r: &str| -> Vec<String> { r.split(' ').map(str::to_owned).collect() };
    assert!(rows[0].contains("rm -rf build") && rows[0].contains("intact"));
    assert!(rows[1].contains("chmod 600 keep/notes.txt"));
    let a_events = a.events().count().to_string();
    assert!(cells(&rows[0]).contains(&a_events), "{}", rows[0]);
    // rm -rf build: 5 files and 3 directories deleted.
    assert!(
        rows[0].contains(&format!("intact {a_events} 8 0 0")),
        "{}",
        rows[0]
    );
    assert!(rows[1].contains(" 0 0 1 "), "{}", rows[1]);

    // Not a trace.
    let junk = t.join("notes.txt");
    std::fs::write(&junk, "hello\n").unwrap();
    let (_, o) = report(&t, &[&junk], &[]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("notes.txt: not a trace"), "{err}");

    // A modified trace: refused, then reported with --unverified.
    let text_ = std::fs::read_to_string(&a.trace).unwrap();
    let bad = t.join("modified.jsonl");
    std::fs::write(
        &bad,
        text_.replacen("\"comm\":\"rm\"", "\"comm\":\"mv\"", 1),
    )
    .unwrap();
    let (page, o) = report(&t, &[&bad], &[]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("does not verify") && err.contains("modified") && err.contains("--unverified"),
        "{err}"
    );
    assert!(!page.exists(), "nothing is written for a refused trace");
    let (page, o) = report(&t, &[&bad], &["--unverified"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dom = render_dom(&t, &page);
    let header = text(element(&dom, "dl", "id=\"run-header\""));
    assert!(
        header.contains("BROKEN") && header.contains("modified"),
        "{header}"
    );
}
