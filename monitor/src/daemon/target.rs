//! One watched target: its selector, its trace and its pipeline.
use std::{
    collections::{BTreeMap, VecDeque},
    path::{Path, PathBuf},
    time::{Instant, SystemTime},
};

use anyhow::Context as _;
use serde_json::{json, Value};

use super::config::TargetSpec;
use crate::{
    core::rfc3339,
    pipeline::{Pipeline, Recorder, Stage},
    policy::{Context, Policy},
    record::Action,
    trace::{note::Note, Cause, Header, Loss, SealSummary, TraceWriter},
};

/// Where a target is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Its container or pod cgroup does not exist yet.
    Waiting,
    /// Watched; its trace is open.
    Active,
    /// Its cgroup was removed or its processes exited: trace sealed.
    Gone(String),
    /// Removed by `abm watch remove` or deselected: trace sealed.
    Removed,
}

impl State {
    pub fn name(&self) -> &'static str {
        match self {
            State::Waiting => "waiting",
            State::Active => "active",
            State::Gone(_) => "gone",
            State::Removed => "removed",
        }
    }
}

/// Event counts sampled once per poll, for rates.
#[derive(Default)]
pub struct Rate {
    samples: VecDeque<(Instant, u64)>,
}

impl Rate {
    pub fn sample(&mut self, total: u64) {
        let now = Instant::now();
        self.samples.push_back((now, total));
        while self
            .samples
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t).as_secs_f64() > 61.0)
        {
            self.samples.pop_front();
        }
    }

    /// Events per second over (about) the last `secs` seconds.
    pub fn per_sec(&self, secs: f64, total: u64) -> f64 {
        let now = Instant::now();
        let first = self
            .samples
            .iter()
            .find(|(t, _)| now.duration_since(*t).as_secs_f64() <= secs);
        match first {
            Some((t, n)) => {
                let dt = now.duration_since(*t).as_secs_f64();
                if dt < 0.5 {
                    0.0
                } else {
                    (total - n) as f64 / dt
                }
            }
            None => 0.0,
        }
    }
}

pub struct Target {
    pub id: u32,
    pub spec: TargetSpec,
    pub state: State,
    /// The watched cgroup (cgroup, container and pod targets).
    pub cgroup: Option<(PathBuf, u64)>,
    /// The open trace file.
    pub recorder: Option<Recorder>,
    pub trace: Option<PathBuf>,
    pub pipeline: Pipeline,
    pub events: u64,
    pub lost: BTreeMap<String, u64>,
    pub rate: Rate,
    pub started: Option<String>,
    pub ended: Option<String>,
    pub seal: Option<SealSummary>,
    /// Where and how the current trace was opened, for the file that
    /// continues it when it is rotated.
    opened: Option<(PathBuf, Option<Vec<u8>>, Header)>,
    /// The current file's number in its rotated sequence (0: the first).
    part: u32,
    /// After a rotation sealed a file and the next could not be opened:
    /// how to open it, retried at every flush.
    next: Option<(PathBuf, Option<Vec<u8>>, Header)>,
    /// What could not be written meanwhile: records counted as a loss
    /// (`trace_unwritable`) and kernel losses held, both written into the
    /// next file first.
    unwritten: Option<Loss>,
    held_losses: Vec<Loss>,
    /// Where each trace file's anchor goes (`anchor_dir`), if anywhere.
    pub anchor_dir: Option<PathBuf>,
    /// The current file's anchor.
    pub anchor: Option<PathBuf>,
}

/// Creates a trace file's anchor: a new file (never an old one), mode
/// 0600, append-only while the trace is live.
fn open_anchor(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    if let Err(e) = crate::protect::protect_trace(path) {
        tracing::debug!("anchor {} left unprotected: {e}", path.display());
    }
    Ok(f)
}

impl Target {
    pub fn new(id: u32, spec: TargetSpec, policy: Policy) -> Target {
        let ctx = Context {
            workspace: spec.workspace.clone().unwrap_or_default(),
            home: spec.home.clone().unwrap_or_else(|| PathBuf::from("/root")),
            trace_path: None,
        };
        let mut pipeline = Pipeline::new(policy, ctx);
        pipeline.target = Some(spec.name.clone());
        Target {
            id,
            spec,
            state: State::Waiting,
            cgroup: None,
            recorder: None,
            trace: None,
            pipeline,
            events: 0,
            lost: BTreeMap::new(),
            rate: Rate::default(),
            started: None,
            ended: None,
            seal: None,
            opened: None,
            part: 0,
            next: None,
            unwritten: None,
            held_losses: Vec::new(),
            anchor_dir: None,
            anchor: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn is_live(&self) -> bool {
        self.state == State::Active
    }

    /// Opens the target's trace: a new file in `dir`, never an old one.
    pub fn open_trace(
        &mut self,
        dir: &Path,
        key: Option<Vec<u8>>,
        header: Header,
    ) -> anyhow::Result<()> {
        self.part = 0;
        self.open_file(dir, key, header)
    }

    /// Seals the trace when it has reached `limit` bytes on disk and
    /// continues in a new file whose header names this one and its seal
    /// (`extra.continues`). Returns the new file.
    ///
    /// If the next file cannot be opened, the records released meanwhile
    /// are counted, and the next call tries again; the file it opens starts
    /// with their loss record (`trace_unwritable`) and the kernel losses
    /// held.
    pub fn rotate_if_over(&mut self, limit: u64) -> anyhow::Result<Option<PathBuf>> {
        if self.recorder.is_none() {
            return self.open_next();
        }
        let (Some(path), Some(_)) = (&self.trace, &self.recorder) else {
            return Ok(None);
        };
        if limit == 0 || std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) < limit {
            return Ok(None);
        }
        let Some((dir, key, mut header)) = self.opened.clone() else {
            return Ok(None);
        };
        let prev = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let summary = self.seal_file()?;
        self.part += 1;
        header.extra.insert(
            crate::trace::sequence::CONTINUES.into(),
            crate::trace::sequence::Continues {
                trace: prev,
                seal: summary.final_digest,
                part: self.part,
            }
            .to_value(),
        );
        self.next = Some((dir, key, header));
        self.open_next()
    }

    /// Opens the file a rotation continues in, and writes what could not
    /// be written while there was none.
    fn open_next(&mut self) -> anyhow::Result<Option<PathBuf>> {
        let Some((dir, key, header)) = self.next.clone() else {
            return Ok(None);
        };
        self.open_file(&dir, key, header)?;
        self.next = None;
        let held: Vec<Loss> = self.unwritten.take().into_iter().collect();
        for loss in held
            .iter()
            .chain(std::mem::take(&mut self.held_losses).iter())
        {
            self.append_loss(loss)?;
        }
        Ok(self.trace.clone())
    }

    /// Records released while no file is open after a failed rotation.
    fn count_unwritten(&mut self, actions: &[Action]) {
        if self.next.is_none() || actions.is_empty() {
            return;
        }
        let first = actions.iter().map(|a| a.ktime_ns).min().unwrap_or(0);
        let last = actions.iter().map(|a| a.ktime_ns).max().unwrap_or(0);
        let u = self
            .unwritten
            .get_or_insert_with(|| Loss::new(Cause::TraceUnwritable, 0, None, (first, last)));
        u.count += actions.len() as u64;
        u.window_start_ns = u.window_start_ns.min(first);
        u.window_end_ns = u.window_end_ns.max(last);
    }

    fn open_file(
        &mut self,
        dir: &Path,
        key: Option<Vec<u8>>,
        mut header: Header,
    ) -> anyhow::Result<()> {
        self.opened = Some((dir.to_path_buf(), key.clone(), header.clone()));
        let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
            .to_string()
            .replace(':', "");
        let base: String = self
            .spec
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let mut extra = serde_json::Map::new();
        extra.insert("mode".into(), json!("daemon"));
        extra.insert("target".into(), json!(self.spec.name));
        extra.insert("target_id".into(), json!(self.id));
        extra.insert("selector".into(), json!(self.spec.kind()));
        if let Some(c) = &self.spec.container {
            extra.insert("container_id".into(), json!(c));
        }
        if let Some(u) = &self.spec.pod_uid {
            extra.insert("pod_uid".into(), json!(u));
        }
        if let Some(p) = self.spec.pid {
            extra.insert("pid".into(), json!(p));
        }
        if let Some((p, id)) = &self.cgroup {
            extra.insert("cgroup".into(), json!(p.to_string_lossy()));
            extra.insert("cgroup_id".into(), json!(id));
        }
        header.extra.extend(extra);
        header.workspace = self
            .spec
            .workspace
            .as_ref()
            .map(|w| w.to_string_lossy().into_owned())
            .unwrap_or_default();
        for n in 0..1000u32 {
            let path = dir.join(format!(
                "{base}-{stamp}-{}-{n}.{}",
                std::process::id(),
                crate::trace::TraceFormat::Compact.extension()
            ));
            if path.exists() {
                continue;
            }
            let anchor = self.anchor_dir.as_ref().and_then(|d| {
                let name = path.file_name()?.to_string_lossy().into_owned();
                Some(d.join(format!("{name}.anchor")))
            });
            let mut header = header.clone();
            if let Some(a) = &anchor {
                header
                    .extra
                    .insert("anchor".into(), json!(a.to_string_lossy()));
            }
            match TraceWriter::create(&path, key.clone(), header) {
                Ok(mut w) => {
                    if let Err(e) = crate::protect::protect_trace(&path) {
                        tracing::debug!("trace {} left unprotected: {e}", path.display());
                    }
                    self.anchor = None;
                    if let Some(a) = anchor {
                        match open_anchor(&a) {
                            Ok(f) => {
                                w.set_anchor(crate::trace::anchor::AnchorWriter::from_file(f));
                                self.anchor = Some(a);
                            }
                            Err(e) => {
                                tracing::error!(
                                    "target {}: cannot create the anchor {}: {e}; the trace {} \
                                     has none",
                                    self.spec.name,
                                    a.display(),
                                    path.display()
                                );
                                Note::Warning {
                                    anchor: a.to_string_lossy().into_owned(),
                                    error: format!("cannot create the anchor: {e}"),
                                }
                                .append_to(&mut w)?;
                            }
                        }
                    }
                    self.pipeline.ctx.trace_path = Some(path.clone());
                    self.recorder = Some(Recorder::new(w));
                    self.trace = Some(path);
                    self.started = Some(rfc3339(SystemTime::now()));
                    self.state = State::Active;
                    return Ok(());
                }
                Err(crate::trace::TraceError::Exists { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        anyhow::bail!("no free trace file name in {}", dir.display())
    }

    /// Releases ordered records to the trace (`stage`: the enforcing
    /// target's decisions); `written` sees each one written, with its seq.
    pub fn release(
        &mut self,
        force: bool,
        stage: Option<&mut dyn Stage>,
        written: &mut dyn FnMut(u64, &Action),
    ) -> anyhow::Result<()> {
        let Some(r) = self.recorder.as_mut() else {
            let acts = self.pipeline.release(force, usize::MAX);
            self.count_unwritten(&acts);
            return Ok(());
        };
        let n = r.release(&mut self.pipeline, force, stage, written)?;
        self.events += n as u64;
        Ok(())
    }

    pub fn append_loss(&mut self, loss: &Loss) -> anyhow::Result<()> {
        if let Some(r) = self.recorder.as_mut() {
            r.loss(loss)?;
            *self.lost.entry(loss.cause.clone()).or_default() += loss.count;
        } else if self.next.is_some() {
            self.held_losses.push(loss.clone());
        }
        Ok(())
    }

    pub fn note(&mut self, note: &Note) -> anyhow::Result<()> {
        if let Some(r) = self.recorder.as_mut() {
            r.note(note)?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> anyhow::Result<()> {
        if let Some(r) = self.recorder.as_mut() {
            r.flush()?;
        }
        Ok(())
    }

    /// Seals the trace (after the caller released the pipeline) and moves
    /// to `state`.
    pub fn seal(&mut self, state: State) -> anyhow::Result<()> {
        if self.recorder.is_none() && self.next.is_some() {
            // A last try, so the losses are written and sealed.
            if let Err(e) = self.open_next() {
                let n = self.unwritten.as_ref().map_or(0, |u| u.count);
                tracing::error!(
                    "target {}: {n} record(s) not written, no trace file could be opened: {e:#}",
                    self.spec.name
                );
            }
        }
        if let Some(r) = self.recorder.take() {
            let summary = r.finish(&self.pipeline, None)?;
            self.release_files();
            self.seal = Some(summary);
        }
        self.ended = Some(rfc3339(SystemTime::now()));
        self.state = state;
        Ok(())
    }

    /// Seals the current file with the losses it records.
    fn seal_file(&mut self) -> anyhow::Result<SealSummary> {
        let r = self.recorder.take().context("no trace is open")?;
        let summary = r.seal(None)?;
        self.release_files();
        Ok(summary)
    }

    /// A sealed file and its anchor are no longer append-only.
    fn release_files(&self) {
        for p in [&self.trace, &self.anchor].into_iter().flatten() {
            crate::protect::release_trace(p);
        }
    }

    /// The target's line in `abm status`.
    pub fn status(&self) -> Value {
        let mut v = json!({
            "id": self.id,
            "name": self.spec.name,
            "kind": self.spec.kind(),
            "state": self.state.name(),
            "events": self.events,
            "events_per_sec_10s": round2(self.rate.per_sec(10.0, self.events)),
            "events_per_sec_1m": round2(self.rate.per_sec(60.0, self.events)),
            "lost": self.lost,
            "trace": self.trace.as_ref().map(|p| p.to_string_lossy()),
            "anchor": self.anchor.as_ref().map(|p| p.to_string_lossy()),
            "started": self.started,
            "ended": self.ended,
            "policy_digest": self.pipeline.policy.digest(),
            "enforce": self.spec.enforce,
        });
        let o = v.as_object_mut().expect("object");
        if let Some(c) = &self.spec.cgroup {
            o.insert("selector".into(), json!(c.to_string_lossy()));
        }
        if let Some(c) = &self.spec.container {
            o.insert("selector".into(), json!(c));
        }
        if let Some(p) = self.spec.pid {
            o.insert("selector".into(), json!(p));
        }
        if let Some(u) = &self.spec.pod_uid {
            o.insert("selector".into(), json!(u));
        }
        if let Some((p, id)) = &self.cgroup {
            o.insert("cgroup".into(), json!(p.to_string_lossy()));
            o.insert("cgroup_id".into(), json!(id));
        }
        if let State::Gone(why) = &self.state {
            o.insert("reason".into(), json!(why));
        }
        if let Some(s) = &self.seal {
            o.insert("final_digest".into(), json!(s.final_digest));
        }
        v
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Op;
    use crate::trace::{read_trace, verify, TraceRecord, VerifyStatus};

    fn unlinks(n: usize, t0: u64) -> Vec<Action> {
        (0..n)
            .map(|i| Action {
                op: Some(Op::Unlink),
                ktime_ns: t0 + i as u64,
                pid: 7,
                tid: 7,
                path: Some(format!("/w/file-{i:04}-with-a-name-long-enough")),
                result: Some(0),
                ..Action::default()
            })
            .collect()
    }

    /// Released through the target's pipeline (judged), to its trace.
    fn write(t: &mut Target, acts: Vec<Action>) {
        for a in acts {
            t.pipeline.orderer.ready(a);
        }
        t.release(true, None, &mut |_, _| {}).unwrap();
    }

    fn lost_of(path: &Path) -> Vec<Loss> {
        read_trace(path)
            .unwrap()
            .into_iter()
            .filter_map(|r| match r {
                TraceRecord::Loss { loss, .. } => Some(loss),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn records_with_no_file_after_a_failed_rotation_are_a_loss_in_the_next() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("traces");
        std::fs::create_dir(&dir).unwrap();
        let spec = TargetSpec {
            name: "t".into(),
            ..TargetSpec::default()
        };
        let mut t = Target::new(1, spec, Policy::default_pack());
        t.open_trace(&dir, None, Header::default()).unwrap();
        write(&mut t, unlinks(100, 1_000));
        t.flush().unwrap();
        let first = t.trace.clone().unwrap();
        // The next file is to go to a directory that does not exist (yet).
        let later = tmp.path().join("later");
        t.opened.as_mut().unwrap().0 = later.clone();
        // (Any size is over a limit of 1 byte.)
        assert!(t.rotate_if_over(1).is_err());
        assert!(t.recorder.is_none());
        write(&mut t, unlinks(30, 5_000));
        t.append_loss(&Loss {
            cause: "ringbuf_full".into(),
            count: 2,
            cpu: Some(0),
            window_start_ns: 5_000,
            window_end_ns: 5_100,
        })
        .unwrap();
        assert!(t.rotate_if_over(4096).is_err(), "still no directory");
        write(&mut t, unlinks(12, 9_000));
        std::fs::create_dir(&later).unwrap();
        let next = t.rotate_if_over(4096).unwrap().expect("reopened");
        t.seal(State::Removed).unwrap();

        assert_eq!(verify(&first, None).unwrap().status, VerifyStatus::Intact);
        assert!(next.starts_with(&later));
        let report = verify(&next, None).unwrap();
        assert_eq!(report.status, VerifyStatus::Intact);
        let lost = lost_of(&next);
        assert_eq!(lost.len(), 2, "{lost:?}");
        assert_eq!(lost[0].cause, Cause::TraceUnwritable.name());
        assert_eq!(lost[0].count, 42, "30 + 12 records had no file");
        assert_eq!(
            (lost[0].window_start_ns, lost[0].window_end_ns),
            (5_000, 9_011)
        );
        assert_eq!((lost[1].cause.as_str(), lost[1].count), ("ringbuf_full", 2));
        assert_eq!(report.lost.get(Cause::TraceUnwritable.name()), Some(&42));
        assert_eq!(t.lost.get(Cause::TraceUnwritable.name()), Some(&42));
    }
}
