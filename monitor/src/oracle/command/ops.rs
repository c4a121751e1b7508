//! Operations surfaces: systemd units (`systemctl`, `service`), Slurm jobs
//! (`sbatch`, `scancel`, `scontrol`), Alertmanager silences (`amtool`),
//! Ansible hosts and remote `rsync` destinations.

use super::{base, Args, CommandObjects};

const UNIT_TYPES: [&str; 11] = [
    "service",
    "socket",
    "target",
    "timer",
    "mount",
    "automount",
    "path",
    "slice",
    "scope",
    "device",
    "swap",
];

/// A unit name with its type made explicit: `api` is `api.service`; a
/// glob (`app-*`) is kept as written.
fn unit(name: &str) -> String {
    let typed = name
        .rsplit_once('.')
        .is_some_and(|(_, t)| UNIT_TYPES.contains(&t));
    if typed || name.contains(['*', '?', '[']) {
        name.to_owned()
    } else {
        format!("{name}.service")
    }
}

pub(super) fn systemctl(args: &[String]) -> CommandObjects {
    const VALUED: [&str; 20] = [
        "-H",
        "--host",
        "-M",
        "--machine",
        "-t",
        "--type",
        "--state",
        "-p",
        "--property",
        "-s",
        "--signal",
        "--kill-whom",
        "--kill-value",
        "--root",
        "-n",
        "--lines",
        "-o",
        "--output",
        "--job-mode",
        "--what",
    ];
    let a = Args::parse(args, &VALUED);
    let scope = if let Some(h) = a.value(&["-H", "--host"]) {
        h.to_owned()
    } else if let Some(m) = a.value(&["-M", "--machine"]) {
        m.to_owned()
    } else if a.has(&["--user"]) {
        "user".to_owned()
    } else if a.has(&["--global"]) {
        "global".to_owned()
    } else {
        "system".to_owned()
    };
    let verb = a.pos.first().cloned().unwrap_or_default();
    let rest = a.pos.get(1..).unwrap_or(&[]);
    let obj = |u: &str| format!("systemd://{scope}/{}", unit(u));
    let whole = vec![format!("systemd://{scope}/*")];
    let (changes, objects) = match verb.as_str() {
        "start"
        | "stop"
        | "reload"
        | "restart"
        | "try-restart"
        | "reload-or-restart"
        | "try-reload-or-restart"
        | "condrestart"
        | "force-reload"
        | "kill"
        | "clean"
        | "freeze"
        | "thaw"
        | "enable"
        | "disable"
        | "reenable"
        | "preset"
        | "mask"
        | "unmask"
        | "link"
        | "revert"
        | "edit"
        | "reset-failed"
        | "isolate" => (true, rest.iter().map(|u| obj(u)).collect()),
        "set-property" | "set-default" | "add-wants" | "add-requires" => {
            (true, rest.iter().take(1).map(|u| obj(u)).collect())
        }
        "daemon-reload" | "daemon-reexec" | "reboot" | "poweroff" | "halt" | "kexec"
        | "suspend" | "hibernate" | "hybrid-sleep" | "default" | "rescue" | "emergency"
        | "exit" | "switch-root" | "preset-all" | "set-environment" | "unset-environment" => {
            (true, whole)
        }
        "status" | "show" | "cat" | "is-active" | "is-enabled" | "is-failed" | "help"
        | "list-dependencies" => (false, rest.iter().map(|u| obj(u)).collect()),
        _ => (false, Vec::new()),
    };
    CommandObjects {
        tool: "systemctl",
        verb,
        changes,
        objects,
        ..Default::default()
    }
}

/// `service NAME ACTION`, the SysV wrapper.
pub(super) fn service(args: &[String]) -> Option<CommandObjects> {
    let a = Args::parse(args, &[]);
    let name = a.pos.first()?;
    let action = a.pos.get(1).cloned().unwrap_or_default();
    Some(CommandObjects {
        tool: "systemctl",
        changes: matches!(
            action.as_str(),
            "start"
                | "stop"
                | "restart"
                | "reload"
                | "force-reload"
                | "try-restart"
                | "condrestart"
        ),
        verb: action,
        objects: vec![format!("systemd://system/{}", unit(name))],
        ..Default::default()
    })
}

/// The value of the first `Key=Value` argument whose key is one of `keys`
/// (compared without case, as scontrol does).
fn kv<'a>(words: &'a [String], keys: &[&'a str]) -> Option<(&'a str, &'a str)> {
    words.iter().find_map(|w| {
        let (k, v) = w.split_once('=')?;
        keys.iter()
            .find(|want| want.eq_ignore_ascii_case(k))
            .map(|want| (*want, v))
    })
}

/// `slurm://CLUSTER/job/ID`, `.../partition/NAME`, `.../node/NAME`,
/// `.../reservation/NAME`.
pub(super) fn slurm(prog: &str, args: &[String]) -> Option<CommandObjects> {
    const VALUED: [&str; 52] = [
        "-M",
        "--clusters",
        "-p",
        "--partition",
        "-A",
        "--account",
        "-n",
        "--name",
        "--jobname",
        "-J",
        "--job-name",
        "-q",
        "--qos",
        "-R",
        "--reservation",
        "--reservation-name",
        "-s",
        "--signal",
        "-t",
        "--state",
        "--time",
        "-u",
        "--user",
        "-w",
        "--nodelist",
        "--wckey",
        "-o",
        "--output",
        "-e",
        "--error",
        "-N",
        "--nodes",
        "--ntasks",
        "-c",
        "--cpus-per-task",
        "--mem",
        "--mem-per-cpu",
        "-G",
        "--gpus",
        "--gres",
        "-C",
        "--constraint",
        "-D",
        "--chdir",
        "--export",
        "-a",
        "--array",
        "-d",
        "--dependency",
        "--wrap",
        "-x",
        "--exclude",
    ];
    let a = Args::parse(args, &VALUED);
    let cluster = a
        .value(&["-M", "--clusters"])
        .map(|c| c.split(',').next().unwrap_or(c).to_owned())
        .unwrap_or_else(|| "default".to_owned());
    let o = |kind: &str, name: &str| format!("slurm://{cluster}/{kind}/{name}");
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let (verb, changes, objects) = match prog {
        "sbatch" => {
            let parts = a
                .value(&["-p", "--partition"])
                .map(list)
                .unwrap_or_else(|| vec!["default".to_owned()]);
            (
                "sbatch".to_owned(),
                true,
                parts.iter().map(|p| o("partition", p)).collect(),
            )
        }
        "scancel" => {
            let ids: Vec<String> = a.pos.iter().flat_map(|p| list(p)).collect();
            let objects = if ids.is_empty() {
                vec![o("job", "*")]
            } else {
                ids.iter().map(|i| o("job", i)).collect()
            };
            ("scancel".to_owned(), true, objects)
        }
        _ => {
            let words = &a.pos;
            let cmd = words.first()?.to_ascii_lowercase();
            let rest = words.get(1..).unwrap_or(&[]);
            let named = |rest: &[String]| -> Vec<String> {
                const KEYS: [(&str, &str); 6] = [
                    ("JobId", "job"),
                    ("JobName", "job-name"),
                    ("NodeName", "node"),
                    ("PartitionName", "partition"),
                    ("ReservationName", "reservation"),
                    ("FrontendName", "frontend"),
                ];
                let keys: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
                match kv(rest, &keys) {
                    Some((k, v)) => {
                        let kind = KEYS.iter().find(|(x, _)| *x == k).map_or("job", |(_, n)| n);
                        list(v).iter().map(|x| o(kind, x)).collect()
                    }
                    // `scontrol delete reservation r1`, `show job 12`.
                    None => match rest {
                        [kind, names @ ..] if !names.is_empty() => names
                            .iter()
                            .flat_map(|n| list(n))
                            .map(|n| o(&kind.to_ascii_lowercase(), &n))
                            .collect(),
                        _ => Vec::new(),
                    },
                }
            };
            let (changes, objects) = match cmd.as_str() {
                "hold" | "uhold" | "release" | "requeue" | "requeue_hold" | "suspend"
                | "resume" | "top" | "notify" => (
                    true,
                    rest.iter()
                        .take(if cmd == "notify" { 1 } else { rest.len() })
                        .flat_map(|r| list(r))
                        .map(|j| o("job", &j))
                        .collect(),
                ),
                "update" | "create" | "delete" => (true, named(rest)),
                "reboot" | "cancel_reboot" => (
                    true,
                    rest.iter()
                        .filter(|r| !r.contains('='))
                        .flat_map(|r| list(r))
                        .map(|n| o("node", &n))
                        .collect(),
                ),
                "reconfigure" | "shutdown" | "takeover" => {
                    (true, vec![format!("slurm://{cluster}/*")])
                }
                "show" => (false, named(rest)),
                _ => (false, Vec::new()),
            };
            (format!("scontrol {cmd}"), changes, objects)
        }
    };
    Some(CommandObjects {
        tool: "slurm",
        verb,
        changes,
        objects,
        ..Default::default()
    })
}

/// An Alertmanager matcher as one object segment: quotes dropped, `/`
/// escaped.
fn matcher(m: &str) -> String {
    let m = m.trim_matches(['{', '}', ' ']);
    let (k, op, v) = ["=~", "!~", "!=", "="]
        .iter()
        .find_map(|op| m.split_once(op).map(|(k, v)| (k, *op, v)))
        .unwrap_or(("alertname", "=", m));
    let v = v.trim_matches(['"', '\'']);
    format!("{}{op}{}", k.trim(), v.replace('/', "%2F"))
}

/// `alertmanager://HOST/silence/MATCHERS` (matchers sorted, joined by `,`),
/// `alertmanager://HOST/silence-id/ID`, `alertmanager://HOST/alert/LABELS`.
pub(super) fn amtool(args: &[String]) -> CommandObjects {
    const VALUED: [&str; 16] = [
        "--alertmanager.url",
        "-o",
        "--output",
        "--timeout",
        "--config.file",
        "--http.config.file",
        "-a",
        "--author",
        "-d",
        "--duration",
        "--start",
        "--end",
        "-c",
        "--comment",
        "--within",
        "--annotation",
    ];
    let a = Args::parse(args, &VALUED);
    let host = a
        .value(&["--alertmanager.url"])
        .map(|u| {
            let u = u.split_once("://").map_or(u, |(_, r)| r);
            u.split('/').next().unwrap_or(u).to_owned()
        })
        .unwrap_or_else(|| "default".to_owned());
    let words: Vec<&str> = a.pos.iter().map(String::as_str).collect();
    let group = match words.first() {
        Some(&"sil") => "silence",
        Some(g) => g,
        None => "",
    };
    let sub = words.get(1).copied().unwrap_or("query");
    let rest = words.get(2..).unwrap_or(&[]);
    let set = |kind: &str, ms: &[&str]| {
        let mut m: Vec<String> = ms.iter().map(|x| matcher(x)).collect();
        m.sort();
        if m.is_empty() {
            // `silence query` with no matcher: every silence.
            m.push("*".to_owned());
        }
        format!("alertmanager://{host}/{kind}/{}", m.join(","))
    };
    let (changes, objects) = match (group, sub) {
        ("silence", "add") => (true, vec![set("silence", rest)]),
        ("silence", "expire" | "update") => (
            true,
            rest.iter()
                .map(|id| format!("alertmanager://{host}/silence-id/{id}"))
                .collect(),
        ),
        ("silence", "import") => (true, vec![format!("alertmanager://{host}/silence/*")]),
        ("silence", "query") => (false, vec![set("silence", rest)]),
        ("alert", "add") => (true, vec![set("alert", rest)]),
        _ => (false, Vec::new()),
    };
    CommandObjects {
        tool: "amtool",
        verb: format!("{group} {sub}").trim().to_owned(),
        changes,
        objects,
        ..Default::default()
    }
}

/// `ansible://INVENTORY/HOSTS`: INVENTORY from `-i` (the file's name up to
/// its first `.`), HOSTS from `-l`/`--limit`, else the ad-hoc host pattern,
/// else `*`.
pub(super) fn ansible(prog: &str, args: &[String]) -> CommandObjects {
    const VALUED: [&str; 20] = [
        "-i",
        "--inventory",
        "-l",
        "--limit",
        "-m",
        "--module-name",
        "-a",
        "--args",
        "-e",
        "--extra-vars",
        "-u",
        "--user",
        "-f",
        "--forks",
        "-t",
        "--tags",
        "--skip-tags",
        "-b",
        "--become-user",
        "--vault-password-file",
    ];
    let a = Args::parse(args, &VALUED);
    let inv = a
        .value(&["-i", "--inventory"])
        .map(|i| {
            if i.contains(',') {
                "inline".to_owned()
            } else {
                let n = base(i.trim_end_matches('/'));
                n.split('.').next().unwrap_or(n).to_owned()
            }
        })
        .unwrap_or_else(|| "default".to_owned());
    let adhoc = prog == "ansible";
    let hosts = a
        .value(&["-l", "--limit"])
        .map(str::to_owned)
        .or_else(|| adhoc.then(|| a.pos.first().cloned()).flatten())
        .unwrap_or_else(|| "*".to_owned());
    let module = a.value(&["-m", "--module-name"]).unwrap_or("command");
    let changes = !adhoc || !matches!(module, "ping" | "setup" | "debug" | "gather_facts" | "stat");
    let verb = if adhoc {
        module.to_owned()
    } else {
        format!("playbook {}", a.pos.join(" "))
    };
    CommandObjects {
        tool: "ansible",
        verb: verb.trim().to_owned(),
        changes,
        objects: vec![format!("ansible://{inv}/{hosts}")],
        ..Default::default()
    }
}

/// A remote rsync location (`host:path`, `user@host:path`, `host::module`,
/// `rsync://host/path`) as `rsync://HOST/PATH`.
fn remote(loc: &str) -> Option<String> {
    if let Some(r) = loc.strip_prefix("rsync://") {
        let (h, p) = r.split_once('/').unwrap_or((r, ""));
        let h = h.rsplit('@').next().unwrap_or(h);
        return Some(format!("rsync://{h}/{}", p.trim_start_matches('/')));
    }
    let (h, p) = loc.split_once(':')?;
    if h.is_empty() || h.contains('/') {
        return None;
    }
    let h = h.rsplit('@').next().unwrap_or(h);
    let p = p.trim_start_matches(':');
    Some(format!("rsync://{h}/{}", p.trim_start_matches('/')))
}

/// rsync with a remote side; `None` for a local copy (judged by its file
/// changes).
pub(super) fn rsync(args: &[String]) -> Option<CommandObjects> {
    const VALUED: [&str; 20] = [
        "-e",
        "--rsh",
        "--exclude",
        "--include",
        "-f",
        "--filter",
        "--rsync-path",
        "--files-from",
        "--exclude-from",
        "--include-from",
        "--backup-dir",
        "--suffix",
        "--chmod",
        "--chown",
        "--log-file",
        "--partial-dir",
        "--password-file",
        "--port",
        "-T",
        "--temp-dir",
    ];
    let a = Args::parse(args, &VALUED);
    let (dest, srcs) = a.pos.split_last()?;
    if let Some(d) = remote(dest) {
        return Some(CommandObjects {
            tool: "rsync",
            verb: "push".into(),
            changes: true,
            objects: vec![d],
            ..Default::default()
        });
    }
    let pulled: Vec<String> = srcs.iter().filter_map(|s| remote(s)).collect();
    (!pulled.is_empty()).then(|| CommandObjects {
        tool: "rsync",
        verb: "pull".into(),
        changes: false,
        objects: pulled,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Env, Extractor};
    use super::*;

    fn x(cmd: &str) -> CommandObjects {
        let argv: Vec<String> = cmd.split_whitespace().map(str::to_owned).collect();
        Extractor::default()
            .extract(&argv, "/w", &Env::new(), true)
            .unwrap_or_else(|| panic!("no extractor for {cmd}"))
    }

    #[test]
    fn systemd_units() {
        let c = x("systemctl restart api worker.service web@1");
        assert!(c.changes);
        assert_eq!(
            c.objects,
            [
                "systemd://system/api.service",
                "systemd://system/worker.service",
                "systemd://system/web@1.service"
            ]
        );
        assert_eq!(
            x("systemctl --user stop sync.timer").objects,
            ["systemd://user/sync.timer"]
        );
        assert_eq!(
            x("systemctl -H db1 restart postgresql").objects,
            ["systemd://db1/postgresql.service"]
        );
        assert_eq!(x("systemctl daemon-reload").objects, ["systemd://system/*"]);
        assert!(!x("systemctl status api").changes);
        assert!(!x("systemctl is-active api").changes);
        let c = x("systemctl --dry-run reboot");
        assert!(!c.changes && c.dry_run);
        let c = x("service nginx reload");
        assert!(c.changes);
        assert_eq!(c.objects, ["systemd://system/nginx.service"]);
        assert!(!x("service nginx status").changes);
    }

    #[test]
    fn slurm_jobs_partitions_nodes() {
        let c = x("scancel 1002 1003_4,1005");
        assert!(c.changes);
        assert_eq!(
            c.objects,
            [
                "slurm://default/job/1002",
                "slurm://default/job/1003_4",
                "slurm://default/job/1005"
            ]
        );
        assert_eq!(
            x("scancel -u alice --state=PENDING").objects,
            ["slurm://default/job/*"]
        );
        assert_eq!(x("scancel -M hpc2 7").objects, ["slurm://hpc2/job/7"]);
        let c = x("sbatch -p gpu,debug -J train job.sh");
        assert!(c.changes);
        assert_eq!(
            c.objects,
            [
                "slurm://default/partition/gpu",
                "slurm://default/partition/debug"
            ]
        );
        let c = x("sbatch --test-only job.sh");
        assert!(!c.changes && c.dry_run);
        assert_eq!(c.objects, ["slurm://default/partition/default"]);
        assert_eq!(
            x("scontrol update NodeName=n[1-3] State=DRAIN Reason=x").objects,
            ["slurm://default/node/n[1-3]"]
        );
        assert_eq!(
            x("scontrol update jobid=12 TimeLimit=1:00").objects,
            ["slurm://default/job/12"]
        );
        assert_eq!(
            x("scontrol delete ReservationName=maint").objects,
            ["slurm://default/reservation/maint"]
        );
        assert_eq!(
            x("scontrol hold 12,13").objects,
            ["slurm://default/job/12", "slurm://default/job/13"]
        );
        let c = x("scontrol show job 12");
        assert!(!c.changes);
        assert_eq!(c.objects, ["slurm://default/job/12"]);
        assert_eq!(x("scontrol reconfigure").objects, ["slurm://default/*"]);
    }

    #[test]
    fn alertmanager_silences() {
        let c = x("amtool silence add instance=db1 alertname=DiskFull -d 2h -c maint");
        assert!(c.changes);
        assert_eq!(
            c.objects,
            ["alertmanager://default/silence/alertname=DiskFull,instance=db1"]
        );
        assert_eq!(
            x("amtool --alertmanager.url=http://am:9093/ silence add DiskFull job=~node/x").objects,
            ["alertmanager://am:9093/silence/alertname=DiskFull,job=~node%2Fx"]
        );
        let c = x("amtool silence expire 8f2 9a1");
        assert!(c.changes);
        assert_eq!(
            c.objects,
            [
                "alertmanager://default/silence-id/8f2",
                "alertmanager://default/silence-id/9a1"
            ]
        );
        let c = x("amtool silence query");
        assert!(!c.changes);
        assert_eq!(c.objects, ["alertmanager://default/silence/*"]);
        assert!(!x("amtool silence").changes);
        assert!(x("amtool alert add alertname=Test").changes);
    }

    #[test]
    fn ansible_and_rsync() {
        let c = x("ansible-playbook -i inventories/prod.ini -l web site.yml");
        assert!(c.changes);
        assert_eq!(c.objects, ["ansible://prod/web"]);
        let c = x("ansible-playbook -i prod.ini site.yml --check");
        assert!(!c.changes && c.dry_run);
        assert_eq!(c.objects, ["ansible://prod/*"]);
        assert!(!x("ansible all -m ping").changes);
        assert_eq!(
            x("ansible db -m shell -a uptime").objects,
            ["ansible://default/db"]
        );
        let c = x("rsync -av --delete dist/ deploy@web1:/srv/app/");
        assert!(c.changes);
        assert_eq!(c.objects, ["rsync://web1/srv/app/"]);
        assert!(!x("rsync -avn dist/ web1:/srv/app/").changes);
        assert!(!x("rsync -a web1:/srv/app/ backup/").changes);
        let argv: Vec<String> = ["rsync", "-a", "a/", "b/"].map(String::from).to_vec();
        assert!(Extractor::default()
            .extract(&argv, "/w", &Env::new(), true)
            .is_none());
    }

    #[test]
    fn settle_makes_failed_commands_attempts() {
        let mut c = x("systemctl restart api");
        c.settle(Some(5 << 8), false);
        assert!(c.attempt && !c.changed());
        assert_eq!((c.exit_code(), c.signal()), (Some(5), None));
        c.settle(Some(5 << 8), true);
        assert!(
            !c.attempt && c.changed(),
            "a failure with effects changed something"
        );
        c.settle(Some(9), false);
        assert!(c.attempt);
        assert_eq!((c.exit_code(), c.signal()), (None, Some(9)));
        c.settle(None, false);
        assert!(!c.attempt, "no exit recorded: a change");
        c.settle(Some(0), false);
        assert!(c.changed());
        let mut r = x("systemctl status api");
        r.settle(Some(3 << 8), false);
        assert!(!r.attempt, "read-only commands are never attempts");
    }
}
