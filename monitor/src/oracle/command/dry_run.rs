//! Dry runs: the flag of each tool that makes any of its commands
//! read-only. One table for every CLI whose objects the oracle reads; a
//! command run with one of these flags names its objects and changes
//! nothing (`dry_run: true` in `evidence.commands`).

/// One tool's dry-run flags.
pub struct DryRun {
    /// The extractor's tool name (`CommandObjects::tool`).
    pub tool: &'static str,
    /// Verbs (or verb prefixes: `compose` covers `compose up`) the flags
    /// apply to; empty: every verb.
    pub verbs: &'static [&'static str],
    /// Long or single-dash flags, alone or with `=VALUE` (a value of `none`
    /// or `false` turns the dry run off).
    pub flags: &'static [&'static str],
    /// A short flag letter that also counts inside a cluster (`-avn`).
    pub short: Option<char>,
}

/// The dry-run flags of every tool the oracle reads. `docs/oracle.md`
/// lists the same table.
pub const DRY_RUNS: &[DryRun] = &[
    DryRun {
        tool: "kubectl",
        verbs: &[],
        flags: &["--dry-run"],
        short: None,
    },
    DryRun {
        tool: "helm",
        verbs: &[],
        flags: &["--dry-run"],
        short: None,
    },
    DryRun {
        tool: "istioctl",
        verbs: &[],
        flags: &["--dry-run"],
        short: None,
    },
    DryRun {
        tool: "aws",
        verbs: &[],
        flags: &["--dryrun", "--dry-run"],
        short: None,
    },
    DryRun {
        tool: "gsutil",
        verbs: &["rsync"],
        flags: &[],
        short: Some('n'),
    },
    DryRun {
        tool: "gcloud",
        verbs: &[],
        flags: &["--dry-run"],
        short: None,
    },
    DryRun {
        tool: "docker",
        verbs: &["compose"],
        flags: &["--dry-run"],
        short: None,
    },
    DryRun {
        tool: "git",
        verbs: &["push"],
        flags: &["--dry-run"],
        short: Some('n'),
    },
    DryRun {
        tool: "systemctl",
        verbs: &[],
        flags: &["--dry-run"],
        short: None,
    },
    DryRun {
        tool: "slurm",
        verbs: &["sbatch"],
        flags: &["--test-only"],
        short: None,
    },
    DryRun {
        tool: "ansible",
        verbs: &[],
        flags: &[
            "--check",
            "--syntax-check",
            "--list-hosts",
            "--list-tasks",
            "--list-tags",
        ],
        short: Some('C'),
    },
    DryRun {
        tool: "rsync",
        verbs: &[],
        flags: &["--dry-run"],
        short: Some('n'),
    },
];

fn verb_applies(verbs: &[&str], verb: &str) -> bool {
    verbs.is_empty()
        || verbs.iter().any(|v| {
            verb == *v
                || verb
                    .strip_prefix(v)
                    .is_some_and(|rest| rest.starts_with(' '))
        })
}

/// True when `args` (the arguments after the program name) carry a dry-run
/// flag of `tool` for `verb`. Arguments after `--` are not flags.
pub fn is_dry_run(tool: &str, verb: &str, args: &[String]) -> bool {
    let Some(d) = DRY_RUNS
        .iter()
        .find(|d| d.tool == tool && verb_applies(d.verbs, verb))
    else {
        return false;
    };
    let mut on = false;
    for a in args {
        if a == "--" {
            break;
        }
        let (name, value) = match a.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (a.as_str(), None),
        };
        if d.flags.contains(&name) {
            // The last occurrence wins: `--dry-run=none` turns it off.
            on = !matches!(value, Some("none" | "false"));
        } else if let Some(c) = d.short {
            let cluster = a.strip_prefix('-').filter(|r| !r.starts_with('-'));
            if cluster.is_some_and(|r| r.chars().all(|x| x.is_ascii_alphabetic()) && r.contains(c))
            {
                on = true;
            }
        }
    }
    on
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dry(tool: &str, verb: &str, args: &str) -> bool {
        let v: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
        is_dry_run(tool, verb, &v)
    }

    #[test]
    fn flags_values_clusters_and_verbs() {
        assert!(dry("kubectl", "apply", "apply -f x --dry-run=client"));
        assert!(dry("kubectl", "apply", "apply -f x --dry-run"));
        assert!(!dry("kubectl", "apply", "apply -f x --dry-run=none"));
        assert!(dry("helm", "upgrade", "upgrade a c --dry-run=server"));
        assert!(!dry("helm", "upgrade", "upgrade a c --dry-run=false"));
        assert!(dry("rsync", "", "-avn src h:/d"));
        assert!(dry("rsync", "", "--dry-run -a src h:/d"));
        assert!(!dry("rsync", "", "-av --exclude=x-n src h:/d"));
        assert!(dry("git", "push", "push -n origin main"));
        assert!(!dry("git", "push", "push origin -- -n"));
        assert!(dry("gsutil", "rsync", "-m rsync -n a gs://b"));
        assert!(
            !dry("gsutil", "cp", "cp -n a gs://b"),
            "cp -n is no-clobber"
        );
        assert!(dry("docker", "compose down", "compose --dry-run down"));
        assert!(
            !dry("docker", "rm", "rm --dry-run x"),
            "not a docker rm flag"
        );
        assert!(dry("ansible", "playbook", "-C -i inv site.yml"));
        assert!(dry("slurm", "sbatch", "--test-only job.sh"));
        assert!(!dry("slurm", "scancel", "--test-only 12"));
        assert!(dry("aws", "s3 rm", "s3 rm s3://b/k --dryrun"));
        assert!(
            !dry("terraform", "apply", "apply --dry-run"),
            "no such flag"
        );
    }
}
