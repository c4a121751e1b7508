//! terraform, gcloud, aws and gsutil.

use super::{Args, CommandObjects, Env, Extractor};

impl Extractor {
    pub(super) fn terraform(
        &mut self,
        args: &[String],
        cwd: &str,
        env: &Env,
        record: bool,
    ) -> CommandObjects {
        const VALUED: [&str; 8] = [
            "-target",
            "-replace",
            "-var",
            "-var-file",
            "-state",
            "-state-out",
            "-backup",
            "-lock-timeout",
        ];
        let a = Args::parse(args, &VALUED);
        let dir = match a.value(&["-chdir"]) {
            Some(d) if d.starts_with('/') => d.to_owned(),
            Some(d) => format!("{}/{d}", cwd.trim_end_matches('/')),
            None => cwd.to_owned(),
        };
        let ws = env
            .get("TF_WORKSPACE")
            .cloned()
            .or_else(|| self.tf_workspace.get(&dir).cloned())
            .unwrap_or_else(|| "default".to_owned());
        let words: Vec<&str> = a.pos.iter().map(String::as_str).collect();
        let verb = match words.as_slice() {
            ["state" | "workspace", sub, ..] => format!("{} {sub}", words[0]),
            [v, ..] => (*v).to_owned(),
            [] => String::new(),
        };
        let targets: Vec<String> = a
            .values(&["-target", "-replace"])
            .into_iter()
            .map(|t| format!("tf://{ws}/{t}"))
            .collect();
        let whole = || {
            if targets.is_empty() {
                vec![format!("tf://{ws}/*")]
            } else {
                targets.clone()
            }
        };
        let (changes, objects) = match words.as_slice() {
            ["apply" | "destroy" | "refresh", ..] => (true, whole()),
            ["plan", ..] => (false, whole()),
            ["import" | "taint" | "untaint", addr, ..] => (true, vec![format!("tf://{ws}/{addr}")]),
            ["state", "rm" | "mv" | "replace-provider", rest @ ..] => (
                true,
                rest.iter().map(|r| format!("tf://{ws}/{r}")).collect(),
            ),
            ["state", "push", ..] => (true, vec![format!("tf://{ws}/*")]),
            ["state", "list" | "show" | "pull", rest @ ..] => (
                false,
                rest.iter().map(|r| format!("tf://{ws}/{r}")).collect(),
            ),
            ["workspace", "select" | "new", name, ..] => {
                if record {
                    self.tf_workspace.insert(dir.clone(), (*name).to_owned());
                }
                (words[1] == "new", vec![format!("tf://{name}")])
            }
            ["workspace", "delete", name, ..] => (true, vec![format!("tf://{name}")]),
            _ => (false, Vec::new()),
        };
        CommandObjects {
            tool: "terraform",
            verb,
            changes,
            objects,
            ..Default::default()
        }
    }

    pub(super) fn gcloud(&mut self, args: &[String], env: &Env, record: bool) -> CommandObjects {
        const VALUED: [&str; 12] = [
            "--project",
            "--account",
            "--configuration",
            "--region",
            "--zone",
            "--format",
            "--filter",
            "--verbosity",
            "--image",
            "--source",
            "--platform",
            "--flags-file",
        ];
        let a = Args::parse(args, &VALUED);
        let project = a
            .value_or_env(&["--project"], env, "CLOUDSDK_CORE_PROJECT")
            .or_else(|| self.gcloud_project.clone())
            .unwrap_or_else(|| "current".to_owned());
        let words: Vec<&str> = a.pos.iter().map(String::as_str).collect();
        if let ["config", "set", "project" | "core/project", p, ..] = words.as_slice() {
            if record {
                self.gcloud_project = Some((*p).to_owned());
            }
        }
        let is_verb = |w: &str| {
            matches!(
                w,
                "create"
                    | "delete"
                    | "update"
                    | "deploy"
                    | "describe"
                    | "list"
                    | "patch"
                    | "resize"
                    | "rollback"
                    | "start"
                    | "stop"
                    | "restart"
                    | "reset"
                    | "import"
                    | "export"
                    | "enable"
                    | "disable"
                    | "set"
                    | "unset"
                    | "apply"
                    | "rm"
                    | "cp"
                    | "mv"
                    | "ls"
                    | "cat"
                    | "read"
                    | "tail"
                    | "info"
                    | "version"
                    | "login"
                    | "activate"
                    | "upgrade"
            ) || ["set-", "add-", "remove-", "get-", "list-", "describe-"]
                .iter()
                .any(|p| w.starts_with(p))
        };
        let vi = words.iter().position(|w| is_verb(w));
        let (groups, verb, names) = match vi {
            Some(i) => (&words[..i], words[i], &words[i + 1..]),
            None => (&words[..], "", &words[words.len()..]),
        };
        let read_only = matches!(
            verb,
            "describe" | "list" | "ls" | "cat" | "read" | "tail" | "info" | "version" | ""
        ) || verb.starts_with("get-")
            || verb.starts_with("list-")
            || verb.starts_with("describe-")
            || groups.first() == Some(&"config")
            || groups.first() == Some(&"auth");
        let mut objects = Vec::new();
        let gs: Vec<&&str> = names.iter().filter(|n| n.starts_with("gs://")).collect();
        if !gs.is_empty() {
            // gcloud storage: the objects are the gs:// arguments (for cp,
            // the destination).
            let dest = if matches!(verb, "cp") {
                &gs[gs.len() - 1..]
            } else {
                &gs[..]
            };
            objects.extend(dest.iter().map(|s| (**s).to_owned()));
        } else {
            let g = groups.join("/");
            if names.is_empty() {
                objects.push(format!("gcloud://{project}/{g}"));
            }
            for n in names {
                objects.push(format!("gcloud://{project}/{g}/{n}"));
            }
        }
        CommandObjects {
            tool: "gcloud",
            verb: [groups.join(" "), verb.to_owned()]
                .join(" ")
                .trim()
                .to_owned(),
            changes: !read_only,
            objects,
            ..Default::default()
        }
    }
}

pub(super) fn aws(args: &[String], env: &Env) -> CommandObjects {
    const VALUED: [&str; 10] = [
        "--profile",
        "--region",
        "--endpoint-url",
        "--output",
        "--query",
        "--bucket",
        "--key",
        "--prefix",
        "--exclude",
        "--include",
    ];
    let a = Args::parse(args, &VALUED);
    let profile = a.value_or_env(&["--profile"], env, "AWS_PROFILE");
    let words: Vec<&str> = a.pos.iter().map(String::as_str).collect();
    let service = words.first().copied().unwrap_or("");
    let op = words.get(1).copied().unwrap_or("");
    let mut objects = Vec::new();
    let recursive = a.has(&["--recursive"]);
    let s3 = |u: &str| {
        if recursive {
            format!("{}/*", u.trim_end_matches('/'))
        } else {
            u.to_owned()
        }
    };
    let changes = match (service, op) {
        ("s3", "cp" | "sync") => {
            if let Some(d) = words
                .last()
                .filter(|d| d.starts_with("s3://") && words.len() > 3)
            {
                objects.push(s3(d));
                true
            } else {
                false
            }
        }
        ("s3", "mv") => {
            objects.extend(
                words[2..]
                    .iter()
                    .filter(|w| w.starts_with("s3://"))
                    .map(|w| s3(w)),
            );
            true
        }
        ("s3", "rm" | "rb" | "mb") => {
            objects.extend(
                words[2..]
                    .iter()
                    .filter(|w| w.starts_with("s3://"))
                    .map(|w| s3(w)),
            );
            true
        }
        ("s3", _) => {
            objects.extend(
                words[2..]
                    .iter()
                    .filter(|w| w.starts_with("s3://"))
                    .map(|w| s3(w)),
            );
            false
        }
        ("s3api", _) => {
            if let Some(b) = a.value(&["--bucket"]) {
                objects.push(match a.value(&["--key"]) {
                    Some(k) => format!("s3://{b}/{k}"),
                    None => format!("s3://{b}"),
                });
            }
            !read_only_aws(op)
        }
        _ => {
            let p = profile.clone().unwrap_or_else(|| "default".to_owned());
            for (k, v) in &a.flags {
                let named = k.ends_with("-name")
                    || k.ends_with("-id")
                    || k.ends_with("-arn")
                    || matches!(k.as_str(), "--name" | "--cluster" | "--service");
                if let (true, Some(v)) = (named && k.starts_with("--"), v) {
                    objects.push(format!("aws://{p}/{service}/{v}"));
                }
            }
            // `--function-name f` style flags carry their value as the next
            // argument: positionals right after such flags were parsed as
            // positionals; take them from the raw list.
            let mut i = 0;
            while i + 1 < args.len() {
                let k = args[i].as_str();
                if k.starts_with("--")
                    && !k.contains('=')
                    && (k.ends_with("-name")
                        || k.ends_with("-id")
                        || k.ends_with("-arn")
                        || matches!(k, "--name" | "--cluster" | "--service"))
                {
                    objects.push(format!("aws://{p}/{service}/{}", args[i + 1]));
                    i += 1;
                }
                i += 1;
            }
            if objects.is_empty() && !service.is_empty() {
                objects.push(format!("aws://{p}/{service}"));
            }
            !read_only_aws(op)
        }
    };
    if let Some(p) = profile {
        if service == "s3" || service == "s3api" {
            objects.push(format!("aws://{p}"));
        }
    }
    CommandObjects {
        tool: "aws",
        verb: format!("{service} {op}").trim().to_owned(),
        changes,
        objects,
        ..Default::default()
    }
}

fn read_only_aws(op: &str) -> bool {
    ["get-", "list-", "describe-", "head-", "wait", "help"]
        .iter()
        .any(|p| op.starts_with(p))
        || op.is_empty()
}

pub(super) fn gsutil(args: &[String]) -> CommandObjects {
    let a = Args::parse(args, &["-o", "-h", "-u", "-p"]);
    let words: Vec<&str> = a.pos.iter().map(String::as_str).collect();
    let verb = words.first().copied().unwrap_or("");
    let sub = words.get(1).copied().unwrap_or("");
    let gs: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| w.starts_with("gs://"))
        .collect();
    let recursive = a.has(&["-r", "-R", "-rf", "-fr"]);
    let obj = |u: &str| {
        if recursive && verb == "rm" {
            format!("{}/*", u.trim_end_matches('/'))
        } else {
            u.to_owned()
        }
    };
    let (changes, objects): (bool, Vec<String>) = match verb {
        "cp" | "rsync" => {
            let dest = gs.last().filter(|d| words.last() == Some(*d));
            (
                dest.is_some(),
                dest.map(|d| vec![d.to_string()]).unwrap_or_default(),
            )
        }
        "mv" | "rm" | "rb" | "mb" | "setmeta" | "compose" | "rewrite" => {
            (true, gs.iter().map(|g| obj(g)).collect())
        }
        "acl" | "iam" | "defacl" | "lifecycle" | "versioning" | "label" | "retention" | "cors"
        | "web" | "logging" | "notification" => (
            !matches!(sub, "get"),
            gs.iter().map(|g| g.to_string()).collect(),
        ),
        _ => (false, gs.iter().map(|g| g.to_string()).collect()),
    };
    CommandObjects {
        tool: "gsutil",
        verb: verb.to_owned(),
        changes,
        objects,
        ..Default::default()
    }
}
