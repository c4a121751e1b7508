//! What the HTML report shows, aggregated from a trace's records into a
//! compact, bounded structure: a run of 100,000 events becomes lanes of
//! time bins, a capped path tree and capped tables, so that the page stays
//! small and renders quickly.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::record::{Action, Op, Treatment};
use crate::trace::{TraceRecord, VerifyReport, VerifyStatus};

/// Time bins across a whole run, per timeline lane.
pub const BINS: u32 = 1000;
/// Lanes kept per grouping; the rest are merged into one lane.
pub const MAX_LANES: usize = 250;
/// Children kept per directory of the path tree; the rest are summed into
/// one "more" entry.
pub const MAX_CHILDREN: usize = 100;
/// Rows kept in the decision and process tables.
pub const MAX_ROWS: usize = 3000;
/// Decision marks kept on the timeline.
pub const MAX_MARKS: usize = 5000;

/// Path categories, in the order of [`Node::c`].
pub const CATEGORIES: [&str; 6] = [
    "deleted",
    "rewritten",
    "chmod",
    "chown",
    "renamed",
    "blocked",
];
const DELETED: usize = 0;
const REWRITTEN: usize = 1;
const CHMOD: usize = 2;
const CHOWN: usize = 3;
const RENAMED: usize = 4;
const BLOCKED: usize = 5;

/// Treatment codes used by the page (0 = no verdict).
pub fn treatment_code(t: Option<Treatment>) -> u8 {
    match t {
        None => 0,
        Some(Treatment::Accept) => 1,
        Some(Treatment::Audit) => 2,
        Some(Treatment::Confirm) => 3,
        Some(Treatment::Preserve) => 4,
        Some(Treatment::Deny) => 5,
    }
}

/// The verification outcome shown in the header.
#[derive(Clone, Debug, Serialize)]
pub struct VerifyView {
    /// `intact`, `unsealed`, `broken` or `not checked`.
    pub status: String,
    pub ok: bool,
    /// What `abm verify` would say, in one line.
    pub detail: String,
    /// `unkeyed`, `authenticated`, `key not given`, `unknown`.
    pub authentication: String,
    pub final_digest: Option<String>,
}

impl VerifyView {
    pub fn from_report(r: &VerifyReport) -> VerifyView {
        use crate::trace::Authentication as A;
        let (status, detail) = match &r.status {
            VerifyStatus::Intact => (
                "intact",
                format!("sealed; all {} records check out", r.records),
            ),
            VerifyStatus::Unsealed { intact_records } => (
                "unsealed",
                format!(
                    "no seal: the run was stopped before sealing; {intact_records} record(s) check out"
                ),
            ),
            VerifyStatus::Broken { intact_records } => (
                "broken",
                match &r.first_bad {
                    Some(p) => format!("{p}; {intact_records} record(s) before it check out"),
                    None => "broken".to_owned(),
                },
            ),
        };
        let authentication = match &r.authentication {
            A::Unknown => "unknown".to_owned(),
            A::Unkeyed => "unkeyed (sha256 chain)".to_owned(),
            A::Authenticated { key_id } => format!("authenticated (key {key_id})"),
            A::KeyNotGiven { key_id } => {
                format!("NOT authenticated: keyed trace (key {key_id}) read without --key")
            }
        };
        VerifyView {
            ok: r.is_intact() && !matches!(r.authentication, A::KeyNotGiven { .. }),
            status: status.to_owned(),
            detail,
            authentication,
            final_digest: r.final_digest.clone(),
        }
    }
}

/// One logical action (or, for traces without action ids, one program
/// run: an exec and what its process did until the next exec).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ActionRow {
    pub id: u64,
    pub label: String,
    pub pid: u32,
    /// First and last event, ms from the run's first event.
    pub start: f64,
    pub end: f64,
    pub events: u64,
    pub ops: BTreeMap<String, u64>,
    /// Strongest treatment of its events (code, see [`treatment_code`]).
    pub treatment: u8,
    /// Enforcement decisions by name (`denied`, `approved`, ...).
    pub decisions: BTreeMap<String, u64>,
    /// From the action summary record, when the trace has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One timeline lane: flat `[bin, count, treatment, ...]` triples for the
/// non-empty bins.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Lane {
    pub label: String,
    pub events: u64,
    pub bins: Vec<u32>,
}

/// A decision drawn on the timeline: `[ms, action lane, process lane, code]`
/// where code is 1 denied, 2 approved, 3 preserved, 4 other.
pub type Mark = (f64, u32, u32, u8);

/// A node of the touched-path tree.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Node {
    /// Name (several components when a chain of single directories was
    /// merged).
    pub n: String,
    /// Counts per [`CATEGORIES`], this node and below.
    pub c: [u64; 6],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub k: Vec<Node>,
    /// Set on the entry that stands for children left out.
    #[serde(skip_serializing_if = "is_zero")]
    pub more: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    pub comm: String,
    pub argv: Vec<String>,
    pub execs: u32,
    pub events: u64,
    pub start: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Decision {
    pub seq: u64,
    pub time: String,
    pub op: String,
    pub path: String,
    pub pid: u32,
    pub comm: String,
    pub action: u64,
    pub treatment: String,
    pub rule: String,
    pub reason: String,
    /// `denied`, `approved`, `preserved`, `timeout`, `abandoned`, or
    /// `not enforced` for a verdict in an observing run.
    pub decision: String,
    pub decided_by: String,
    pub result: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct LossRow {
    pub cause: String,
    pub count: u64,
    pub cpu: Option<u32>,
    pub at: f64,
}

/// Everything the page shows about one trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TraceView {
    pub name: String,
    pub path: String,
    pub header: Value,
    pub verify: Option<VerifyView>,
    pub end_time: Option<String>,
    pub exit_code: Option<i32>,
    /// ms between the first and the last event.
    pub span_ms: f64,
    pub events: u64,
    pub by_op: BTreeMap<String, u64>,
    pub by_treatment: BTreeMap<String, u64>,
    pub decision_counts: BTreeMap<String, u64>,
    pub notes_by_kind: BTreeMap<String, u64>,
    pub losses: BTreeMap<String, u64>,
    pub loss_rows: Vec<LossRow>,
    /// Totals per [`CATEGORIES`].
    pub touched: [u64; 6],
    /// True when records carry logical action ids (else program runs).
    pub action_ids: bool,
    pub actions: Vec<ActionRow>,
    pub actions_total: usize,
    pub lanes_action: Vec<Lane>,
    pub lanes_process: Vec<Lane>,
    pub marks: Vec<Mark>,
    pub tree: Node,
    pub processes: Vec<Process>,
    pub processes_total: usize,
    pub decisions: Vec<Decision>,
    pub decisions_total: usize,
    /// Oracle verdict for this run, when one was given.
    pub verdict: Option<Value>,
}

#[derive(Default)]
struct Tree {
    c: [u64; 6],
    k: BTreeMap<String, Tree>,
}

impl Tree {
    fn add(&mut self, path: &str, cat: usize) {
        let mut t = self;
        t.c[cat] += 1;
        for part in path.split('/').filter(|p| !p.is_empty()) {
            t = t.k.entry(part.to_owned()).or_default();
            t.c[cat] += 1;
        }
    }

    fn into_node(self, name: String) -> Node {
        let mut name = name;
        let mut t = self;
        // Merge chains of single directories (`/home/dev/project`).
        while t.k.len() == 1 {
            let only_count = t.k.values().next().map(|c| c.c) == Some(t.c);
            if !only_count {
                break;
            }
            let (n, child) = t.k.into_iter().next().expect("one child");
            if child.k.is_empty() {
                // Keep leaves as their own entries.
                let mut k = BTreeMap::new();
                k.insert(n, child);
                t.k = k;
                break;
            }
            name = if name.ends_with('/') {
                format!("{name}{n}")
            } else {
                format!("{name}/{n}")
            };
            t = child;
        }
        let mut kids: Vec<(String, Tree)> = t.k.into_iter().collect();
        kids.sort_by(|a, b| {
            let sa: u64 = a.1.c.iter().sum();
            let sb: u64 = b.1.c.iter().sum();
            sb.cmp(&sa).then_with(|| a.0.cmp(&b.0))
        });
        let mut k = Vec::new();
        let mut rest = Node::default();
        for (i, (n, child)) in kids.into_iter().enumerate() {
            if i < MAX_CHILDREN {
                k.push(child.into_node(n));
            } else {
                rest.more += 1;
                for (j, v) in child.c.iter().enumerate() {
                    rest.c[j] += v;
                }
            }
        }
        if rest.more > 0 {
            rest.n = format!("… {} more entries", rest.more);
            k.push(rest);
        }
        Node {
            n: name,
            c: t.c,
            k,
            more: 0,
        }
    }
}

fn enforcement_decision(a: &Action) -> Option<String> {
    a.enforcement.as_ref().map(|e| e.decision.name().to_owned())
}

fn blocked(a: &Action, decision: Option<&str>) -> bool {
    matches!(decision, Some("denied" | "deny" | "timeout"))
        || a.result_note == Some(crate::record::ResultNote::DeniedBySeccomp)
}

fn op_name(a: &Action) -> &'static str {
    a.op.map_or("other", Op::name)
}

fn trunc(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn argv_label(argv: &[String]) -> String {
    trunc(&argv.join(" "), 240)
}

/// Per-lane accumulation before capping.
#[derive(Default)]
struct LaneAcc {
    label: String,
    events: u64,
    /// bin -> (count, strongest treatment code).
    bins: HashMap<u32, (u32, u8)>,
}

impl LaneAcc {
    fn add(&mut self, bin: u32, code: u8) {
        self.events += 1;
        let e = self.bins.entry(bin).or_insert((0, 0));
        e.0 += 1;
        e.1 = e.1.max(code);
    }
}

fn finish_lanes(mut accs: Vec<(u64, LaneAcc)>, what: &str) -> (Vec<Lane>, HashMap<u64, u32>) {
    accs.sort_by(|a, b| b.1.events.cmp(&a.1.events).then(a.0.cmp(&b.0)));
    let mut index = HashMap::new();
    let mut lanes = Vec::new();
    let mut other = LaneAcc::default();
    let mut others = 0usize;
    let n = accs.len();
    for (i, (key, acc)) in accs.into_iter().enumerate() {
        if i < MAX_LANES || n <= MAX_LANES + 1 {
            index.insert(key, lanes.len() as u32);
            lanes.push(acc);
        } else {
            others += 1;
            index.insert(key, MAX_LANES as u32);
            other.events += acc.events;
            for (b, (c, t)) in acc.bins {
                let e = other.bins.entry(b).or_insert((0, 0));
                e.0 += c;
                e.1 = e.1.max(t);
            }
        }
    }
    if others > 0 {
        other.label = format!("{others} other {what}");
        lanes.push(other);
    }
    let lanes = lanes
        .into_iter()
        .map(|acc| {
            let mut bins: Vec<(u32, (u32, u8))> = acc.bins.into_iter().collect();
            bins.sort_unstable_by_key(|b| b.0);
            Lane {
                label: acc.label,
                events: acc.events,
                bins: bins
                    .into_iter()
                    .flat_map(|(b, (c, t))| [b, c, u32::from(t)])
                    .collect(),
            }
        })
        .collect();
    (lanes, index)
}

/// Aggregates one trace's records into what the page shows.
pub fn build(
    name: String,
    path: String,
    records: &[TraceRecord],
    verify: Option<&VerifyReport>,
) -> TraceView {
    let mut v = TraceView {
        name,
        path,
        verify: verify.map(VerifyView::from_report),
        ..TraceView::default()
    };
    let events: Vec<(u64, &Action)> = records
        .iter()
        .filter_map(|r| match r {
            TraceRecord::Event { seq, action } => Some((*seq, action)),
            _ => None,
        })
        .collect();
    let t0 = events.iter().map(|(_, a)| a.ktime_ns).min().unwrap_or(0);
    let t1 = events.iter().map(|(_, a)| a.ktime_ns).max().unwrap_or(t0);
    let span = (t1 - t0).max(1);
    let ms = |k: u64| k.saturating_sub(t0) as f64 / 1e6;
    let bin_of =
        |k: u64| ((k.saturating_sub(t0) as u128 * u128::from(BINS - 1)) / span as u128) as u32;
    v.span_ms = (t1 - t0) as f64 / 1e6;

    // Logical actions: summary notes (kind `action`) name them; without
    // them every exec starts a program run that its forked children share
    // until they exec themselves.
    let mut summaries: HashMap<u64, &Value> = HashMap::new();
    for r in records {
        match r {
            TraceRecord::Header(h) => {
                v.header = serde_json::json!({
                    "command": h.command,
                    "policy_digest": h.policy_digest,
                    "backends": h.backends,
                    "host": h.host,
                    "kernel": h.kernel,
                    "workspace": h.workspace,
                    "start_time": h.start_time,
                    "monitor_version": h.monitor_version,
                    "chain": h.chain.name(),
                    "extra": h.extra,
                });
            }
            TraceRecord::Note { kind, body, .. } => {
                *v.notes_by_kind.entry(kind.clone()).or_default() += 1;
                if kind == "action" {
                    if let Some(id) = body.get("action").and_then(Value::as_u64) {
                        summaries.insert(id, body);
                    }
                }
            }
            TraceRecord::Loss { loss, .. } => {
                *v.losses.entry(loss.cause.clone()).or_default() += loss.count;
                if v.loss_rows.len() < MAX_ROWS {
                    v.loss_rows.push(LossRow {
                        cause: loss.cause.clone(),
                        count: loss.count,
                        cpu: loss.cpu,
                        at: ms(loss.window_start_ns.max(t0)),
                    });
                }
            }
            TraceRecord::Seal { seal, .. } => {
                v.end_time = Some(seal.end_time.clone());
                v.exit_code = seal.exit_code;
            }
            TraceRecord::Event { .. } => {}
        }
    }
    v.action_ids = !summaries.is_empty();

    let mut current: HashMap<u32, u64> = HashMap::new();
    let mut failed_execs: std::collections::HashSet<u64> = std::collections::HashSet::new();
    let mut actions: HashMap<u64, ActionRow> = HashMap::new();
    let mut procs: HashMap<u32, Process> = HashMap::new();
    let mut lane_a: HashMap<u64, LaneAcc> = HashMap::new();
    let mut lane_p: HashMap<u64, LaneAcc> = HashMap::new();
    let mut marks_raw: Vec<(f64, u64, u32, u8)> = Vec::new();
    let mut tree = Tree::default();
    let mut decisions = Vec::new();

    for &(seq, a) in &events {
        v.events += 1;
        let op = op_name(a);
        *v.by_op.entry(op.to_owned()).or_default() += 1;
        let tcode = treatment_code(a.verdict.as_ref().map(|x| x.treatment));
        if let Some(vd) = &a.verdict {
            *v.by_treatment
                .entry(format!("{:?}", vd.treatment).to_lowercase())
                .or_default() += 1;
        }
        let decision = enforcement_decision(a);
        if let Some(d) = &decision {
            *v.decision_counts.entry(d.clone()).or_default() += 1;
        }

        // Which action and process this record belongs to: the record's
        // `action` id when the trace has them; else the process's last exec
        // (older traces), worked out below either way to follow processes.
        let p = procs.entry(a.pid).or_insert_with(|| Process {
            pid: a.pid,
            ppid: a.ppid,
            comm: a.comm.clone(),
            start: ms(a.ktime_ns),
            ..Process::default()
        });
        p.events += 1;
        let action_id = if a.op == Some(Op::Exec) && a.succeeded() {
            p.execs += 1;
            p.comm = a.comm.clone();
            if let Some(argv) = &a.argv {
                p.argv = argv.iter().take(64).map(|s| trunc(s, 300)).collect();
            }
            // The failed attempts of a PATH search belong to the exec that
            // then succeeds.
            let id = match current.get(&a.pid) {
                Some(&g) if failed_execs.contains(&g) => {
                    failed_execs.remove(&g);
                    if let (Some(row), Some(argv)) = (actions.get_mut(&g), &a.argv) {
                        row.label = argv_label(argv);
                    }
                    g
                }
                _ => seq,
            };
            current.insert(a.pid, id);
            id
        } else if a.op == Some(Op::Exec)
            && current
                .get(&a.pid)
                .is_none_or(|g| !failed_execs.contains(g))
        {
            // A failed exec starts a group that the next successful exec of
            // the process takes over.
            current.insert(a.pid, seq);
            failed_execs.insert(seq);
            seq
        } else if a.op == Some(Op::Exec) {
            current[&a.pid]
        } else {
            let id = current
                .get(&a.pid)
                .or_else(|| current.get(&a.ppid))
                .copied();
            let id = match id {
                Some(id) => id,
                None => {
                    // A process that was running before the trace began:
                    // its records form one group keyed by its first record.
                    current.insert(a.pid, seq);
                    seq
                }
            };
            if a.op == Some(Op::Fork) {
                if let Some(child) = a.result.filter(|r| *r > 0) {
                    current.insert(child as u32, id);
                    procs.entry(child as u32).or_insert_with(|| Process {
                        pid: child as u32,
                        ppid: a.pid,
                        comm: a.comm.clone(),
                        start: ms(a.ktime_ns),
                        ..Process::default()
                    });
                }
            }
            id
        };
        let action_id = a.action.unwrap_or(action_id);
        let row = actions.entry(action_id).or_insert_with(|| ActionRow {
            id: action_id,
            label: match &a.argv {
                Some(argv) if a.op == Some(Op::Exec) => argv_label(argv),
                _ => format!("{} (pid {}, running before the trace)", a.comm, a.pid),
            },
            pid: a.pid,
            start: ms(a.ktime_ns),
            ..ActionRow::default()
        });
        row.events += 1;
        row.end = ms(a.ktime_ns);
        *row.ops.entry(op.to_owned()).or_default() += 1;
        row.treatment = row.treatment.max(tcode);
        if let Some(d) = &decision {
            *row.decisions.entry(d.clone()).or_default() += 1;
        }

        let bin = bin_of(a.ktime_ns);
        let la = lane_a.entry(action_id).or_default();
        la.add(bin, tcode);
        let lp = lane_p.entry(u64::from(a.pid)).or_default();
        lp.add(bin, tcode);

        // Touched paths.
        let is_blocked = blocked(a, decision.as_deref());
        if let Some(path) = &a.path {
            let cat = if is_blocked {
                Some(BLOCKED)
            } else if !a.succeeded() {
                None
            } else {
                match a.op {
                    Some(Op::Unlink | Op::Rmdir) => Some(DELETED),
                    Some(Op::Write | Op::Truncate) => Some(REWRITTEN),
                    Some(Op::Chmod) => Some(CHMOD),
                    Some(Op::Chown) => Some(CHOWN),
                    Some(Op::Rename) => Some(RENAMED),
                    _ => None,
                }
            };
            if let Some(cat) = cat {
                tree.add(path, cat);
                v.touched[cat] += 1;
            }
        }

        // Decisions: what a guardrail did, and what a policy would have
        // had decided for an observing run.
        let strong = a.verdict.as_ref().is_some_and(|x| {
            matches!(
                x.treatment,
                Treatment::Confirm | Treatment::Deny | Treatment::Preserve
            )
        });
        if decision.is_some() || strong {
            let code = match decision.as_deref() {
                Some("denied" | "deny" | "timeout") => 1,
                Some("approved") => 2,
                Some("preserved") => 3,
                _ => 4,
            };
            if marks_raw.len() < MAX_MARKS {
                marks_raw.push((ms(a.ktime_ns), action_id, a.pid, code));
            }
            let enf = a
                .enforcement
                .as_ref()
                .and_then(|e| serde_json::to_value(e).ok());
            let field = |k: &str| enf.as_ref().and_then(|e| e.get(k)).and_then(Value::as_str);
            let vd = a.verdict.as_ref();
            decisions.push(Decision {
                seq,
                time: a.time.clone(),
                op: op.to_owned(),
                path: a.path.clone().unwrap_or_default(),
                pid: a.pid,
                comm: a.comm.clone(),
                action: action_id,
                treatment: vd
                    .map(|x| format!("{:?}", x.treatment).to_lowercase())
                    .or_else(|| field("treatment").map(str::to_owned))
                    .unwrap_or_default(),
                rule: vd
                    .map(|x| x.rule.clone())
                    .or_else(|| field("rule").map(str::to_owned))
                    .unwrap_or_default(),
                reason: vd
                    .map(|x| x.reason.clone())
                    .or_else(|| field("reason").map(str::to_owned))
                    .unwrap_or_default(),
                decision: decision
                    .clone()
                    .unwrap_or_else(|| "not enforced (observed)".to_owned()),
                decided_by: field("decided_by").unwrap_or("policy").to_owned(),
                result: match (a.result, &a.errno) {
                    (_, Some(e)) => e.clone(),
                    (Some(r), None) => r.to_string(),
                    (None, None) => a
                        .result_note
                        .map(|n| n.name().to_owned())
                        .unwrap_or_default(),
                },
            });
        }
    }

    // Decisions recorded only as notes (a waiting call that went away).
    for r in records {
        if let TraceRecord::Note { seq, kind, body } = r {
            if kind != "enforcement" {
                continue;
            }
            let enf = body.get("enforcement").unwrap_or(body);
            let d = enf.get("decision").and_then(Value::as_str).unwrap_or("");
            if d != "abandoned" {
                continue;
            }
            *v.decision_counts.entry(d.to_owned()).or_default() += 1;
            let s = |k: &str| {
                body.get(k)
                    .or_else(|| enf.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            decisions.push(Decision {
                seq: *seq,
                time: s("decided_at"),
                op: s("op"),
                path: s("path"),
                pid: body.get("pid").and_then(Value::as_u64).unwrap_or(0) as u32,
                comm: s("comm"),
                treatment: s("treatment"),
                rule: s("rule"),
                reason: s("reason"),
                decision: d.to_owned(),
                decided_by: s("decided_by"),
                ..Decision::default()
            });
        }
    }

    // Summary records name the action and its outcome.
    for (id, body) in &summaries {
        if let Some(row) = actions.get_mut(id) {
            if let Some(argv) = body.get("argv").and_then(Value::as_array) {
                let argv: Vec<String> = argv
                    .iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect();
                if !argv.is_empty() {
                    row.label = argv_label(&argv);
                }
            }
            row.rule = body.get("rule").and_then(Value::as_str).map(str::to_owned);
            row.reason = body
                .get("reason")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
    }

    let mut rows: Vec<ActionRow> = actions.into_values().collect();
    rows.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.id.cmp(&b.id)));
    for (id, acc) in &mut lane_a {
        if let Some(r) = rows.iter().find(|r| r.id == *id) {
            acc.label = format!("#{} {}", r.id, r.label);
        }
    }
    for (pid, acc) in &mut lane_p {
        if let Some(p) = procs.get(&(*pid as u32)) {
            let what = if p.argv.is_empty() {
                p.comm.clone()
            } else {
                argv_label(&p.argv)
            };
            acc.label = format!("pid {} {}", p.pid, what);
        }
    }
    let (lanes_action, idx_a) = finish_lanes(lane_a.into_iter().collect(), "actions");
    let (lanes_process, idx_p) = finish_lanes(lane_p.into_iter().collect(), "processes");
    v.lanes_action = lanes_action;
    v.lanes_process = lanes_process;
    v.marks = marks_raw
        .into_iter()
        .map(|(t, a, p, c)| {
            (
                t,
                idx_a.get(&a).copied().unwrap_or(0),
                idx_p.get(&u64::from(p)).copied().unwrap_or(0),
                c,
            )
        })
        .collect();

    v.actions_total = rows.len();
    if rows.len() > MAX_ROWS {
        // Keep the actions with the most events, in time order.
        let mut by_size: Vec<usize> = (0..rows.len()).collect();
        by_size.sort_by(|&a, &b| rows[b].events.cmp(&rows[a].events));
        let mut keep = vec![false; rows.len()];
        for &i in by_size.iter().take(MAX_ROWS) {
            keep[i] = true;
        }
        rows = rows
            .into_iter()
            .zip(keep)
            .filter_map(|(r, k)| k.then_some(r))
            .collect();
    }
    v.actions = rows;

    v.tree = tree.into_node("/".to_owned());
    let mut processes: Vec<Process> = procs.into_values().collect();
    v.processes_total = processes.len();
    processes.sort_by(|a, b| b.events.cmp(&a.events).then(a.pid.cmp(&b.pid)));
    processes.truncate(MAX_ROWS);
    processes.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.pid.cmp(&b.pid)));
    v.processes = processes;
    v.decisions_total = decisions.len();
    decisions.sort_by_key(|d| d.seq);
    decisions.truncate(MAX_ROWS);
    v.decisions = decisions;
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Irreversibility, Scope, Verdict};

    fn ev(seq: u64, op: Op, pid: u32, ppid: u32, path: Option<&str>) -> TraceRecord {
        TraceRecord::Event {
            seq,
            action: Action {
                op: Some(op),
                ktime_ns: 1_000_000 * seq,
                pid,
                tid: pid,
                ppid,
                comm: "sh".into(),
                path: path.map(str::to_owned),
                result: Some(0),
                ..Action::default()
            },
        }
    }

    fn exec(seq: u64, pid: u32, ppid: u32, argv: &[&str]) -> TraceRecord {
        let mut r = ev(seq, Op::Exec, pid, ppid, Some("/usr/bin/x"));
        if let TraceRecord::Event { action, .. } = &mut r {
            action.argv = Some(argv.iter().map(|s| s.to_string()).collect());
            action.comm = argv[0].into();
        }
        r
    }

    #[test]
    fn execs_group_records_and_forks_inherit_until_exec() {
        let mut fork = ev(2, Op::Fork, 10, 1, None);
        if let TraceRecord::Event { action, .. } = &mut fork {
            action.result = Some(11);
        }
        let recs = vec![
            exec(1, 10, 1, &["bash", "-c", "rm -rf t"]),
            fork,
            ev(3, Op::Unlink, 11, 10, Some("/w/t/before-exec")),
            exec(4, 11, 10, &["rm", "-rf", "t"]),
            ev(5, Op::Unlink, 11, 10, Some("/w/t/a")),
            ev(6, Op::Rmdir, 11, 10, Some("/w/t")),
        ];
        let v = build("t".into(), "t".into(), &recs, None);
        assert_eq!(v.actions.len(), 2);
        let bash = v.actions.iter().find(|a| a.id == 1).unwrap();
        assert_eq!(bash.label, "bash -c rm -rf t");
        assert_eq!(bash.events, 3, "exec, fork and the child's pre-exec unlink");
        let rm = v.actions.iter().find(|a| a.id == 4).unwrap();
        assert_eq!(rm.label, "rm -rf t");
        assert_eq!(rm.ops["unlink"], 1);
        assert_eq!(rm.ops["rmdir"], 1);
        assert_eq!(v.touched[DELETED], 3);
        assert_eq!(v.tree.n, "/w/t");
        assert_eq!(v.tree.c[DELETED], 3);
        assert_eq!(v.processes.len(), 2);
        assert_eq!(
            v.processes.iter().find(|p| p.pid == 11).unwrap().argv,
            ["rm", "-rf", "t"]
        );
    }

    #[test]
    fn records_group_by_their_action_field_when_the_trace_has_it() {
        // git's internal children belong to the `git stash` action (seq 1),
        // which the exec heuristic alone would split in two.
        let with_action = |mut r: TraceRecord, id: u64| {
            if let TraceRecord::Event { action, .. } = &mut r {
                action.action = Some(id);
            }
            r
        };
        let recs = vec![
            with_action(exec(1, 10, 1, &["git", "stash"]), 1),
            with_action(exec(2, 11, 10, &["git", "reset", "--hard"]), 1),
            with_action(ev(3, Op::Unlink, 11, 10, Some("/w/a")), 1),
            with_action(exec(4, 12, 1, &["rm", "b"]), 4),
            with_action(ev(5, Op::Unlink, 12, 1, Some("/w/b")), 4),
        ];
        let v = build("t".into(), "t".into(), &recs, None);
        assert_eq!(v.actions.len(), 2, "{:?}", v.actions);
        let git = v.actions.iter().find(|a| a.id == 1).unwrap();
        assert_eq!((git.label.as_str(), git.events), ("git stash", 3));
        assert_eq!(git.ops["unlink"], 1);
        let rm = v.actions.iter().find(|a| a.id == 4).unwrap();
        assert_eq!((rm.label.as_str(), rm.events), ("rm b", 2));
        assert_eq!(v.processes.len(), 3, "processes are still followed");
    }

    #[test]
    fn failed_path_search_execs_join_the_exec_that_succeeds() {
        let mut failed = exec(1, 10, 1, &["rm", "x"]);
        if let TraceRecord::Event { action, .. } = &mut failed {
            action.result = Some(-2);
        }
        let recs = vec![
            failed,
            exec(2, 10, 1, &["rm", "x"]),
            ev(3, Op::Unlink, 10, 1, Some("/w/x")),
        ];
        let v = build("t".into(), "t".into(), &recs, None);
        assert_eq!(v.actions.len(), 1, "{:?}", v.actions);
        assert_eq!(v.actions[0].id, 1);
        assert_eq!(v.actions[0].events, 3);
        assert_eq!(v.actions[0].label, "rm x");
    }

    #[test]
    fn denied_calls_are_blocked_paths_and_decisions() {
        let mut r = ev(2, Op::Unlink, 10, 1, Some("/w/keep"));
        if let TraceRecord::Event { action, .. } = &mut r {
            action.result = Some(-1);
            action.errno = Some("EPERM".into());
            action.result_note = Some(crate::record::ResultNote::DeniedBySeccomp);
            action.verdict = Some(Verdict {
                rule: "no-delete".into(),
                treatment: Treatment::Deny,
                irreversibility: Irreversibility::Irreversible,
                scope: Scope::Workspace,
                reason: "keeps it".into(),
            });
            action.enforcement = serde_json::from_value(serde_json::json!({
                "backend": "seccomp", "decision": "denied", "decided_by": "policy", "rule": "no-delete"
            }))
            .unwrap();
        }
        let recs = vec![exec(1, 10, 1, &["rm", "/w/keep"]), r];
        let v = build("t".into(), "t".into(), &recs, None);
        assert_eq!(v.touched[BLOCKED], 1);
        assert_eq!(v.touched[DELETED], 0);
        assert_eq!(v.decisions.len(), 1);
        let d = &v.decisions[0];
        assert_eq!(
            (d.decision.as_str(), d.decided_by.as_str(), d.rule.as_str()),
            ("denied", "policy", "no-delete")
        );
        assert_eq!(d.result, "EPERM");
        assert_eq!(v.marks.len(), 1);
        assert_eq!(v.marks[0].3, 1);
        assert_eq!(
            v.actions[0].treatment,
            treatment_code(Some(Treatment::Deny))
        );
    }

    #[test]
    fn big_directories_and_many_lanes_are_capped() {
        let mut recs = vec![];
        let mut seq = 1;
        for pid in 0..(MAX_LANES as u32 + 20) {
            recs.push(exec(seq, 100 + pid, 1, &["touch"]));
            seq += 1;
        }
        for i in 0..(MAX_CHILDREN + 50) {
            recs.push(ev(seq, Op::Unlink, 100, 1, Some(&format!("/d/big/f{i}"))));
            seq += 1;
        }
        let v = build("t".into(), "t".into(), &recs, None);
        assert_eq!(v.lanes_process.len(), MAX_LANES + 1);
        assert!(v.lanes_process.last().unwrap().label.contains("20 other"));
        let total: u64 = v.lanes_process.iter().map(|l| l.events).sum();
        assert_eq!(total, v.events, "merged lanes keep every event");
        assert_eq!(v.tree.k.len(), MAX_CHILDREN + 1);
        let more = v.tree.k.last().unwrap();
        assert_eq!(more.more, 50);
        assert_eq!(more.c[DELETED], 50);
        assert_eq!(v.tree.c[DELETED], (MAX_CHILDREN + 50) as u64);
        for l in &v.lanes_process {
            assert!(l.bins.chunks(3).all(|b| b[0] < BINS));
        }
    }
}
