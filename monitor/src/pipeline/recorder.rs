//! The sink of one trace file, the same for `abm run` and the daemon's
//! targets: [`Recorder::release`] takes the pipeline's released records
//! (with a guard's records merged in, through a [`Stage`]), binds each to
//! its logical action, appends it, and writes the notes of the actions
//! that ended; every loss written is counted by cause, so the seal sums
//! what the file records.
use std::{collections::BTreeMap, path::Path, time::SystemTime};

use super::{summary::Summary, Pipeline};
use crate::{
    core::rfc3339,
    kernel::sensitive::Watcher,
    record::{Action, Op},
    trace::{note::Note, Loss, SealInfo, SealSummary, TraceError, TraceWriter},
};

/// Most records taken from the pipeline, judged and written at once.
pub const RELEASE_BATCH: usize = 1024;

/// What runs between the pipeline's release and the trace: an enforcing
/// guard, whose own records join the pipeline before the release
/// (`absorb`, its notes to the trace) and whose decisions are attached to
/// the released records (`annotate`; `force`: nothing more will come).
pub trait Stage {
    fn absorb(&mut self, pipeline: &mut Pipeline, trace: &mut Recorder) -> anyhow::Result<()>;
    fn annotate(&mut self, acts: &mut Vec<Action>, force: bool);
}

/// One open trace file and what it has recorded.
pub struct Recorder {
    writer: TraceWriter,
    /// Losses this file records, by cause: its seal's `lost`.
    lost: BTreeMap<String, u64>,
    /// `abm run`: the kernel's set of sensitive files, which new names the
    /// watched tree creates can join (with a note after their record).
    sensitive: Option<Watcher>,
    /// `abm run`: the end-of-run summary of the records written.
    summary: Option<Summary>,
}

impl Recorder {
    pub fn new(writer: TraceWriter) -> Recorder {
        Recorder {
            writer,
            lost: BTreeMap::new(),
            sensitive: None,
            summary: None,
        }
    }

    /// Also watches the new names records create (`abm run`).
    pub fn watching(mut self, sensitive: Watcher) -> Recorder {
        self.sensitive = Some(sensitive);
        self
    }

    /// Also sums the records up for the end of the run (`abm run`).
    pub fn summing(mut self) -> Recorder {
        self.summary = Some(Summary::default());
        self
    }

    pub fn path(&self) -> &Path {
        self.writer.path()
    }

    /// The summary so far (see [`summing`](Self::summing)).
    pub fn summary(&mut self) -> Option<&mut Summary> {
        self.summary.as_mut()
    }

    /// The pipeline's ordered, judged records to the trace (`force`: all
    /// of them, the run is over), with `stage`'s records merged in and its
    /// decisions attached; `written` sees each record written, with its
    /// seq. Returns how many were written. Records are taken from the
    /// pipeline [`RELEASE_BATCH`] at a time, so a backlog released at once
    /// is never all in memory twice (decoded, then written).
    pub fn release(
        &mut self,
        pipeline: &mut Pipeline,
        force: bool,
        mut stage: Option<&mut dyn Stage>,
        written: &mut dyn FnMut(u64, &Action),
    ) -> anyhow::Result<usize> {
        if let Some(s) = stage.as_deref_mut() {
            s.absorb(pipeline, self)?;
        }
        let mut n = 0;
        loop {
            let mut acts = pipeline.release(force, RELEASE_BATCH);
            let last = acts.len() < RELEASE_BATCH;
            if let Some(s) = stage.as_deref_mut() {
                // Nothing more comes only after the last batch.
                s.annotate(&mut acts, force && last);
            }
            n += acts.len();
            self.record(pipeline, acts, written)?;
            if last {
                return Ok(n);
            }
        }
    }

    /// Records to the trace, in their order: each bound to the seq of the
    /// exec that began its logical action and appended (followed by the
    /// note of a sensitive name it created); then the `action` notes of
    /// the actions that ended.
    fn record(
        &mut self,
        pipeline: &mut Pipeline,
        acts: Vec<Action>,
        written: &mut dyn FnMut(u64, &Action),
    ) -> Result<(), TraceError> {
        for mut a in acts {
            pipeline.judge.bind(&mut a, self.writer.records_written());
            let seq = self.writer.append_event(&a)?;
            if let Some(w) = self.sensitive.as_mut() {
                for note in sensitive_added(w, &a) {
                    note.append_to(&mut self.writer)?;
                }
            }
            if let Some(s) = self.summary.as_mut() {
                s.add(&a);
            }
            written(seq, &a);
        }
        self.write_ended(pipeline, false)
    }

    /// At the end of a run: the notes of every action still open and the
    /// run's decision cost.
    pub fn close_actions(&mut self, pipeline: &mut Pipeline) -> Result<(), TraceError> {
        self.write_ended(pipeline, true)
    }

    /// The `action` notes of the actions that ended (of all still open,
    /// and the run's decision cost, when `all`).
    fn write_ended(&mut self, pipeline: &mut Pipeline, all: bool) -> Result<(), TraceError> {
        let (notes, stats) = crate::action::ended_notes(&mut pipeline.judge, all);
        for n in notes {
            Note::Action(Box::new(n)).append_to(&mut self.writer)?;
        }
        if let Some(s) = stats {
            Note::ActionStats(s).append_to(&mut self.writer)?;
        }
        Ok(())
    }

    pub fn note(&mut self, note: &Note) -> Result<u64, TraceError> {
        note.append_to(&mut self.writer)
    }

    /// A loss record, counted for the seal (also when it cannot be
    /// written: the seal then writes it).
    pub fn loss(&mut self, loss: &Loss) -> Result<u64, TraceError> {
        *self.lost.entry(loss.cause.clone()).or_default() += loss.count;
        self.writer.append_loss(loss)
    }

    pub fn flush(&mut self) -> Result<(), TraceError> {
        self.writer.flush()
    }

    /// Seals the file with the losses it records.
    pub fn seal(self, exit_code: Option<i32>) -> Result<SealSummary, TraceError> {
        self.writer.seal(SealInfo {
            end_time: rfc3339(SystemTime::now()),
            lost_by_cause: self.lost,
            exit_code,
        })
    }

    /// The end of the pipeline's trace: the results whose entry record was
    /// lost (counted as a loss already, kept so a reader can reconcile
    /// kernel record counts), then the seal.
    pub fn finish(
        mut self,
        pipeline: &Pipeline,
        exit_code: Option<i32>,
    ) -> Result<SealSummary, TraceError> {
        if pipeline.unpaired_exits > 0 {
            self.note(&Note::UnpairedResults {
                count: pipeline.unpaired_exits,
            })?;
        }
        self.seal(exit_code)
    }
}

/// A successful create, write-open, rename or link: a new name that may be
/// sensitive (a `.env`, a key) joins the kernel's set, and the trace says
/// so after the record. An exec into a sandbox or container: its own
/// secrets (another mount namespace or root), resolved in its view.
fn sensitive_added(w: &mut Watcher, a: &Action) -> Vec<Note> {
    if a.result.is_none_or(|r| r < 0) {
        return Vec::new();
    }
    if a.op == Some(Op::Exec) {
        let Some(v) = w.entered(a.pid) else {
            return Vec::new();
        };
        let full = w.full;
        return v
            .paths()
            .into_iter()
            .map(|path| Note::SensitiveAdded { path, full })
            .collect();
    }
    let path = match a.op {
        Some(Op::Write | Op::Truncate) => a.path.as_deref(),
        Some(Op::Rename | Op::Link) => a.path2.as_deref(),
        _ => None,
    };
    let Some(path) = path else {
        return Vec::new();
    };
    let was_full = w.full;
    if w.created(path) || w.full != was_full {
        return vec![Note::SensitiveAdded {
            path: path.to_owned(),
            full: w.full,
        }];
    }
    Vec::new()
}
