//! A sequence of traces: the files one writer rotated into. Each file after
//! the first names, in its header (`extra.continues`), the file before it
//! and the digest of that file's seal. The header is the first record of
//! the new file's chain, so the link is as hard to forge as the file: a
//! file removed from the middle, two files swapped or a sealed file
//! rewritten breaks the sequence (docs/trace.md, "Rotation").

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::report::VerifyReport;
use super::{Header, RecordError};

/// The header key that links a rotated file to the one before it.
pub const CONTINUES: &str = "continues";

/// What a rotated file's header says about the file before it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Continues {
    /// File name (no directory) of the previous file.
    pub trace: String,
    /// `final_digest` of the previous file: the hash of its seal record.
    pub seal: String,
    /// This file's number in the sequence (the first file is 0).
    pub part: u32,
}

impl Continues {
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("plain struct")
    }

    /// The link in a header, if there is one; `Err` when the key is
    /// present but malformed.
    pub fn of(h: &Header) -> Result<Option<Continues>, RecordError> {
        match h.extra.get(CONTINUES) {
            None => Ok(None),
            Some(v) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(RecordError::Continues),
        }
    }
}

/// How one file fits the sequence given on the command line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "link", rename_all = "snake_case")]
pub enum Link {
    /// The first file given, and it starts a sequence (no `continues`).
    Start,
    /// The first file given continues a file that was not given: the
    /// sequence is checked from here on.
    StartsLater { continues: String },
    /// Continues the file given before it, whose seal it names.
    Linked,
    /// Does not continue the file given before it.
    Broken { detail: String },
}

impl Link {
    pub fn is_broken(&self) -> bool {
        matches!(self, Link::Broken { .. })
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Checks the links of files given in order, each with its verify report.
pub fn check(files: &[(&Path, &VerifyReport)]) -> Vec<Link> {
    let mut out = Vec::with_capacity(files.len());
    for (i, (path, r)) in files.iter().enumerate() {
        let cont = match r.header.as_ref().map(Continues::of) {
            None => Ok(None),
            Some(c) => c,
        };
        let link = match (i, cont) {
            (_, Err(e)) => Link::Broken {
                detail: e.to_string(),
            },
            (0, Ok(None)) => Link::Start,
            (0, Ok(Some(c))) => Link::StartsLater { continues: c.trace },
            (_, Ok(None)) => Link::Broken {
                detail: format!(
                    "{} starts a sequence of its own: it does not continue {}",
                    file_name(path),
                    file_name(files[i - 1].0)
                ),
            },
            (_, Ok(Some(c))) => {
                let (prev, pr) = files[i - 1];
                let prev_name = file_name(prev);
                if c.trace != prev_name {
                    Link::Broken {
                        detail: format!(
                            "{} continues {}, not {prev_name}: a file is missing or out of order",
                            file_name(path),
                            c.trace
                        ),
                    }
                } else if pr.seal.is_none() {
                    Link::Broken {
                        detail: format!("{prev_name} is not sealed, yet a file continues it"),
                    }
                } else if pr.final_digest.as_deref() != Some(c.seal.as_str()) {
                    Link::Broken {
                        detail: format!(
                            "{} names the seal {} of {prev_name}, which ends with {}: \
                             {prev_name} was replaced or rewritten",
                            file_name(path),
                            short(&c.seal),
                            pr.final_digest.as_deref().map(short).unwrap_or("nothing")
                        ),
                    }
                } else {
                    Link::Linked
                }
            }
        };
        out.push(link);
    }
    out
}

fn short(d: &str) -> &str {
    &d[..d.len().min(16)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::report::VerifyReport;
    use crate::trace::SealRecord;

    fn report(cont: Option<Continues>, sealed_with: Option<&str>) -> VerifyReport {
        let mut r = VerifyReport::new();
        let mut h = Header::default();
        if let Some(c) = cont {
            h.extra.insert(CONTINUES.into(), c.to_value());
        }
        r.header = Some(h);
        if let Some(d) = sealed_with {
            r.seal = Some(SealRecord::default());
            r.final_digest = Some(d.into());
        }
        r
    }

    fn cont(trace: &str, seal: &str, part: u32) -> Option<Continues> {
        Some(Continues {
            trace: trace.into(),
            seal: seal.into(),
            part,
        })
    }

    #[test]
    fn links_are_checked_in_order() {
        let a = report(None, Some("aaaa"));
        let b = report(cont("a.abmt", "aaaa", 1), Some("bbbb"));
        let c = report(cont("b.abmt", "bbbb", 2), None);
        let (pa, pb, pc) = (
            Path::new("/t/a.abmt"),
            Path::new("/t/b.abmt"),
            Path::new("/t/c.abmt"),
        );
        assert_eq!(
            check(&[(pa, &a), (pb, &b), (pc, &c)]),
            vec![Link::Start, Link::Linked, Link::Linked]
        );
        // The middle file left out.
        let l = check(&[(pa, &a), (pc, &c)]);
        assert!(l[1].is_broken(), "{l:?}");
        // Swapped.
        let l = check(&[(pb, &b), (pa, &a)]);
        assert_eq!(
            l[0],
            Link::StartsLater {
                continues: "a.abmt".into()
            }
        );
        assert!(l[1].is_broken());
        // The previous file rewritten: its seal is not the one named.
        let a2 = report(None, Some("ffff"));
        let l = check(&[(pa, &a2), (pb, &b)]);
        match &l[1] {
            Link::Broken { detail } => assert!(detail.contains("rewritten"), "{detail}"),
            other => panic!("{other:?}"),
        }
        // Starting in the middle is said, not an error.
        assert_eq!(
            check(&[(pb, &b), (pc, &c)]),
            vec![
                Link::StartsLater {
                    continues: "a.abmt".into()
                },
                Link::Linked
            ]
        );
    }

    #[test]
    fn a_malformed_link_is_broken() {
        let mut r = report(None, None);
        r.header
            .as_mut()
            .unwrap()
            .extra
            .insert(CONTINUES.into(), serde_json::json!({"trace": 3}));
        let l = check(&[(Path::new("x"), &r)]);
        assert!(l[0].is_broken(), "{l:?}");
    }
}
