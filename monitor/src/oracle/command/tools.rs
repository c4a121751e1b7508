//! docker/podman images and containers, git remote operations.

use super::{Args, CommandObjects};

/// A docker image reference with the registry and tag made explicit:
/// `app` is `docker.io/library/app:latest`.
pub fn image_ref(r: &str) -> String {
    let (name, digest) = match r.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (r, None),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let (repo, tag) = match last.rsplit_once(':') {
        Some((_, t)) => (&name[..name.len() - t.len() - 1], t),
        None => (name, "latest"),
    };
    let first = repo.split('/').next().unwrap_or(repo);
    let has_registry =
        repo.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let full = if has_registry {
        repo.to_owned()
    } else if repo.contains('/') {
        format!("docker.io/{repo}")
    } else {
        format!("docker.io/library/{repo}")
    };
    match digest {
        Some(d) => format!("image://{full}@{d}"),
        None => format!("image://{full}:{tag}"),
    }
}

pub(super) fn docker(args: &[String]) -> CommandObjects {
    const VALUED: [&str; 22] = [
        "-H",
        "--host",
        "--context",
        "--config",
        "--log-level",
        "-t",
        "--tag",
        "-f",
        "--file",
        "--name",
        "-e",
        "--env",
        "-v",
        "--volume",
        "-p",
        "--publish",
        "--network",
        "-w",
        "--workdir",
        "--build-arg",
        "--platform",
        "-u",
    ];
    let a = Args::parse(args, &VALUED);
    let mut words: Vec<&str> = a.pos.iter().map(String::as_str).collect();
    // `docker image rm`, `docker container stop`, `docker buildx build`.
    let group = match words.first() {
        Some(
            &g @ ("image" | "container" | "volume" | "network" | "buildx" | "system" | "builder"
            | "compose"),
        ) => {
            words.remove(0);
            g
        }
        _ => "",
    };
    let verb = words.first().copied().unwrap_or("");
    let rest = words.get(1..).unwrap_or(&[]);
    let mut objects = Vec::new();
    let changes = match (group, verb) {
        ("compose", v) => {
            let project = a.value(&["-p", "--project-name"]).unwrap_or("default");
            objects.push(format!("compose://{project}"));
            matches!(
                v,
                "up" | "down"
                    | "rm"
                    | "stop"
                    | "restart"
                    | "kill"
                    | "pull"
                    | "push"
                    | "build"
                    | "create"
                    | "start"
                    | "pause"
                    | "unpause"
                    | "run"
                    | "exec"
            )
        }
        (_, "prune") => {
            let kind = match group {
                "" | "system" => "*",
                "builder" | "buildx" => "build-cache",
                g => g,
            };
            objects.push(format!("{kind}://*"));
            true
        }
        ("image" | "", "push" | "pull") => {
            objects.extend(rest.iter().map(|r| image_ref(r)));
            true
        }
        ("image" | "", "tag") => {
            objects.extend(rest.get(1).map(|r| image_ref(r)));
            true
        }
        ("image", "rm" | "remove") | ("", "rmi") => {
            objects.extend(rest.iter().map(|r| image_ref(r)));
            true
        }
        ("image" | "" | "buildx", "build") => {
            objects.extend(a.values(&["-t", "--tag"]).iter().map(|r| image_ref(r)));
            true
        }
        ("volume", "rm" | "remove" | "create") => {
            objects.extend(rest.iter().map(|r| format!("volume://{r}")));
            true
        }
        ("network", "rm" | "remove" | "create" | "connect" | "disconnect") => {
            objects.extend(rest.iter().take(1).map(|r| format!("network://{r}")));
            true
        }
        ("container" | "", "run" | "create") => {
            if let Some(n) = a.value(&["--name"]) {
                objects.push(format!("container://{n}"));
            }
            true
        }
        (
            "container" | "",
            "rm" | "stop" | "kill" | "restart" | "start" | "pause" | "unpause" | "update"
            | "rename",
        ) => {
            let take = if verb == "rename" { 1 } else { rest.len() };
            objects.extend(rest.iter().take(take).map(|r| format!("container://{r}")));
            true
        }
        ("container" | "", "exec") => {
            objects.extend(rest.first().map(|r| format!("container://{r}")));
            true
        }
        _ => false,
    };
    CommandObjects {
        tool: "docker",
        verb: [group, verb].join(" ").trim().to_owned(),
        changes,
        objects,
        ..Default::default()
    }
}

pub(super) fn git(args: &[String]) -> Option<CommandObjects> {
    // Global options before the subcommand.
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        if matches!(
            args[i].as_str(),
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace"
        ) {
            i += 1;
        }
        i += 1;
    }
    let sub = args.get(i)?.as_str();
    let a = Args::parse(
        &args[i + 1..],
        &[
            "-o",
            "--push-option",
            "--repo",
            "--receive-pack",
            "--exec",
            "--depth",
            "-b",
            "--branch",
            "--origin",
        ],
    );
    let remote = a.pos.first().map(String::as_str).unwrap_or("origin");
    match sub {
        "push" => {
            let remote = a.value(&["--repo"]).unwrap_or(remote);
            let specs = a.pos.get(1..).unwrap_or(&[]);
            let delete = a.has(&["-d", "--delete"]);
            let mut objects: Vec<String> = specs
                .iter()
                .map(|s| {
                    let s = s.trim_start_matches('+');
                    let dst = match s.split_once(':') {
                        Some((_, d)) if !d.is_empty() => d,
                        Some((src, _)) => src,
                        None => s,
                    };
                    format!("git://{remote}/{dst}")
                })
                .collect();
            if a.has(&["--mirror"]) {
                objects.push(format!("git://{remote}/*"));
            } else if a.has(&["--all", "--branches"]) {
                objects.push(format!("git://{remote}/refs/heads/*"));
            }
            if a.has(&["--tags"]) {
                objects.push(format!("git://{remote}/refs/tags/*"));
            }
            if objects.is_empty() && !delete {
                objects.push(format!("git://{remote}/HEAD"));
            }
            Some(CommandObjects {
                tool: "git",
                verb: "push".into(),
                // `-n`/`--dry-run`: see `super::dry_run`.
                changes: true,
                objects,
                ..Default::default()
            })
        }
        "fetch" | "pull" | "ls-remote" | "clone" | "remote" => {
            if sub == "remote" {
                return None;
            }
            let r = if sub == "clone" {
                a.pos.first().map(String::as_str).unwrap_or("")
            } else {
                remote
            };
            Some(CommandObjects {
                tool: "git",
                verb: sub.to_owned(),
                changes: false,
                objects: vec![format!("git://{r}")],
                ..Default::default()
            })
        }
        _ => None,
    }
}
