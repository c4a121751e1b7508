//! Command objects: what a command-line tool acts on, read from its argument
//! vector (and from the environment where the trace shows it).
//!
//! A cluster, a cloud account or a registry is not a file the kernel sees
//! change: `kubectl rollout restart deployment/api -n dev` is one exec and a
//! network call. The extractors here name the objects such a command acts
//! on as strings of the form `SCHEME://SEGMENT/...`, so that task specs can
//! match them with the same globs as paths (`docs/oracle.md` lists every
//! form):
//!
//! | CLI | object |
//! |---|---|
//! | kubectl, helm, istioctl | `k8s://CONTEXT/NAMESPACE/KIND/NAME` |
//! | terraform | `tf://WORKSPACE/ADDRESS` (`*` for the whole workspace) |
//! | aws s3, s3api | `s3://BUCKET/KEY` |
//! | other aws services | `aws://PROFILE/SERVICE/NAME` |
//! | gsutil, gcloud storage | `gs://BUCKET/OBJECT` |
//! | gcloud | `gcloud://PROJECT/GROUP/.../NAME` |
//! | docker, podman | `image://REGISTRY/REPO:TAG`, `container://NAME`, `volume://NAME`, `network://NAME` |
//! | git push | `git://REMOTE/REF` |
//! | systemctl, service | `systemd://SCOPE/UNIT` |
//! | sbatch, scancel, scontrol | `slurm://CLUSTER/KIND/NAME` |
//! | amtool | `alertmanager://HOST/silence/MATCHERS`, `.../silence-id/ID` |
//! | ansible, ansible-playbook | `ansible://INVENTORY/HOSTS` |
//! | rsync to a remote host | `rsync://HOST/PATH` |
//!
//! Each extractor also says whether the command changes state: read-only
//! verbs (`kubectl get`, `terraform plan`, `helm list`, `docker images`,
//! `git fetch`...) name objects but change nothing, and so does any verb
//! run with its tool's dry-run flag ([`dry_run`], one table for every
//! tool).
//!
//! A command that changes state is a *change* only if it took effect: one
//! that exited with a non-zero status and whose process tree changed no
//! file is an *attempt* ([`CommandObjects::settle`]). The exit status and
//! the file effects come from the trace; the judge supplies them.
//!
//! Exec records do not carry the process environment. Variables that decide
//! the target (`KUBECONFIG`, `KUBE_CONTEXT`, `AWS_PROFILE`, `TF_WORKSPACE`,
//! `CLOUDSDK_CORE_PROJECT`) are known only when they appear in an argument
//! vector: `env NAME=VALUE cmd ...`, which applies to that process and the
//! processes it starts. State that earlier commands of the run selected
//! (`terraform workspace select`, `kubectl config use-context`, `gcloud
//! config set project`) is carried forward by [`Extractor`].

use std::collections::BTreeMap;

mod cloud;
pub mod dry_run;
mod kube;
mod ops;
mod tools;

pub use tools::image_ref;

/// The objects of one command and whether it changes them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandObjects {
    /// The extractor that read it (`kubectl`, `docker`...).
    pub tool: &'static str,
    /// The verb words (`rollout restart`, `destroy`, `s3 rm`).
    pub verb: String,
    /// True when the verb changes the objects (not a read-only verb, not a
    /// dry run). Whether it did is [`CommandObjects::changed`].
    pub changes: bool,
    pub objects: Vec<String>,
    /// The tool's dry-run flag was given (`--dry-run`, `-n`, `--check`...):
    /// the command is read-only whatever its verb.
    pub dry_run: bool,
    /// The process's wait status when it exited (`exit` record), if seen.
    pub exit_status: Option<i64>,
    /// A changing verb that exited non-zero with no observed file effect:
    /// it tried and failed, and changed nothing.
    pub attempt: bool,
}

impl CommandObjects {
    /// True when the command changed its objects: a changing verb that is
    /// not an attempt.
    pub fn changed(&self) -> bool {
        self.changes && !self.attempt
    }

    /// Records how the command ended: `status` is the wait status of its
    /// process (`None` when the trace has no exit for it), `effects` whether
    /// its process tree changed a (non-ignored) file. A changing command
    /// that exited non-zero or was killed, and changed no file, becomes an
    /// attempt. A command that has effects, or whose end is unknown, keeps
    /// counting as a change.
    pub fn settle(&mut self, status: Option<i64>, effects: bool) {
        self.exit_status = status;
        self.attempt = self.changes && status.is_some_and(|s| s != 0) && !effects;
    }

    /// The exit code of a wait status (`None` when killed by a signal).
    pub fn exit_code(&self) -> Option<i64> {
        self.exit_status
            .filter(|s| s & 0x7f == 0)
            .map(|s| (s >> 8) & 0xff)
    }

    /// The signal that killed the command, if one did.
    pub fn signal(&self) -> Option<i64> {
        self.exit_status.map(|s| s & 0x7f).filter(|s| *s != 0)
    }
}

/// Environment variables that decide a command's target.
pub const TARGET_ENV: [&str; 6] = [
    "KUBECONFIG",
    "KUBE_CONTEXT",
    "AWS_PROFILE",
    "TF_WORKSPACE",
    "CLOUDSDK_CORE_PROJECT",
    "DOCKER_CONTEXT",
];

pub type Env = BTreeMap<String, String>;

/// Reads commands in trace order and remembers the selections earlier
/// commands made (terraform workspace per directory, kubectl context, gcloud
/// project).
#[derive(Clone, Debug, Default)]
pub struct Extractor {
    tf_workspace: BTreeMap<String, String>,
    kube_context: Option<String>,
    gcloud_project: Option<String>,
}

fn base(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// Splits arguments into positionals and flag values. `valued` lists the
/// flags that take a value as the next argument; `--flag=value` always
/// works. Arguments after `--` are positionals. Single-dash long flags
/// (terraform's `-target=X`) are handled like `--`.
struct Args {
    pos: Vec<String>,
    flags: Vec<(String, Option<String>)>,
}

impl Args {
    fn parse(args: &[String], valued: &[&str]) -> Args {
        let mut pos = Vec::new();
        let mut flags = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if a == "--" {
                pos.extend(args[i + 1..].iter().cloned());
                break;
            }
            if a.starts_with('-') && a.len() > 1 {
                if let Some((k, v)) = a.split_once('=') {
                    flags.push((k.to_owned(), Some(v.to_owned())));
                } else if valued.contains(&a.as_str()) {
                    flags.push((a.clone(), args.get(i + 1).cloned()));
                    i += 1;
                } else if a.len() > 2 && !a.starts_with("--") && valued.contains(&&a[..2]) {
                    // `-ndev`
                    flags.push((a[..2].to_owned(), Some(a[2..].to_owned())));
                } else {
                    flags.push((a.clone(), None));
                }
            } else {
                pos.push(a.clone());
            }
            i += 1;
        }
        Args { pos, flags }
    }

    /// The last value of any of `names`.
    fn value(&self, names: &[&str]) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(k, v)| names.contains(&k.as_str()) && v.is_some())
            .and_then(|(_, v)| v.as_deref())
    }

    /// The last value of any of `names`, else the environment variable
    /// the tool reads the same setting from.
    fn value_or_env(&self, names: &[&str], env: &Env, var: &str) -> Option<String> {
        self.value(names)
            .map(str::to_owned)
            .or_else(|| env.get(var).cloned())
    }

    fn values(&self, names: &[&str]) -> Vec<&str> {
        self.flags
            .iter()
            .filter(|(k, _)| names.contains(&k.as_str()))
            .filter_map(|(_, v)| v.as_deref())
            .collect()
    }

    fn has(&self, names: &[&str]) -> bool {
        self.flags.iter().any(|(k, _)| names.contains(&k.as_str()))
    }
}

impl Extractor {
    /// The objects of the command `argv` run in `cwd` with the known
    /// environment `env`; `None` when no extractor knows the program.
    /// `record` is false for commands that did not run (their selections
    /// are not remembered).
    pub fn extract(
        &mut self,
        argv: &[String],
        cwd: &str,
        env: &Env,
        record: bool,
    ) -> Option<CommandObjects> {
        let prog = base(argv.first()?);
        let args = &argv[1..];
        let mut c = self.by_tool(prog, args, cwd, env, record)?;
        if dry_run::is_dry_run(c.tool, &c.verb, args) {
            c.dry_run = true;
            c.changes = false;
        }
        Some(c)
    }

    fn by_tool(
        &mut self,
        prog: &str,
        args: &[String],
        cwd: &str,
        env: &Env,
        record: bool,
    ) -> Option<CommandObjects> {
        match prog {
            "kubectl" | "oc" => self.kubectl(args, env, record),
            "helm" => Some(self.helm(args, env)),
            "istioctl" => Some(self.istioctl(args, env)),
            "terraform" | "tofu" => Some(self.terraform(args, cwd, env, record)),
            "aws" => Some(cloud::aws(args, env)),
            "gsutil" => Some(cloud::gsutil(args)),
            "gcloud" => Some(self.gcloud(args, env, record)),
            "docker" | "podman" => Some(tools::docker(args)),
            "git" => tools::git(args),
            "systemctl" => Some(ops::systemctl(args)),
            "service" => ops::service(args),
            "sbatch" | "scancel" | "scontrol" => ops::slurm(prog, args),
            "amtool" => Some(ops::amtool(args)),
            "ansible" | "ansible-playbook" => Some(ops::ansible(prog, args)),
            "rsync" => ops::rsync(args),
            _ => None,
        }
    }
}

/// Variables that `env NAME=VALUE ... PROGRAM` sets, if `argv` is such a
/// call: (assignments, the remaining program argv).
pub fn env_wrapper(argv: &[String]) -> Option<(Env, &[String])> {
    if argv.first().map(|p| base(p)) != Some("env") {
        return None;
    }
    let mut vars = Env::new();
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if a == "-i" || a == "--ignore-environment" || a == "-0" {
            i += 1;
        } else if a == "-u" || a == "-C" || a == "-S" {
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else if let Some((k, v)) = a.split_once('=') {
            if TARGET_ENV.contains(&k) {
                vars.insert(k.to_owned(), v.to_owned());
            }
            i += 1;
        } else {
            break;
        }
    }
    Some((vars, &argv[i.min(argv.len())..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(cmd: &str) -> CommandObjects {
        x_env(cmd, &[])
    }

    fn x_env(cmd: &str, env: &[(&str, &str)]) -> CommandObjects {
        let argv: Vec<String> = cmd.split_whitespace().map(str::to_owned).collect();
        let env: Env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Extractor::default()
            .extract(&argv, "/w", &env, true)
            .unwrap_or_else(|| panic!("no extractor for {cmd}"))
    }

    fn objs(cmd: &str) -> Vec<String> {
        x(cmd).objects
    }

    #[test]
    fn kubectl_names_context_namespace_kind_and_name() {
        let c = x("kubectl rollout restart deployment/api -n dev");
        assert_eq!(c.verb, "rollout restart");
        assert!(c.changes);
        assert_eq!(c.objects, ["k8s://current/dev/deployment/api"]);
        assert_eq!(
            objs("kubectl --context prod delete deploy api worker --namespace=shop"),
            [
                "k8s://prod/shop/deployment/api",
                "k8s://prod/shop/deployment/worker"
            ]
        );
        assert_eq!(
            objs("kubectl rollout restart deployment -ndev"),
            ["k8s://current/dev/deployment/*"]
        );
        assert_eq!(
            objs("kubectl delete ns dev"),
            ["k8s://current/dev/namespace/dev"]
        );
        assert_eq!(
            objs("kubectl drain node-1"),
            ["k8s://current/-/node/node-1"]
        );
        assert_eq!(
            objs("kubectl scale --replicas=3 deployment/api"),
            ["k8s://current/default/deployment/api"]
        );
        assert_eq!(
            objs("kubectl label pods web tier=front"),
            ["k8s://current/default/pod/web"]
        );
        assert_eq!(
            objs("kubectl apply -f deploy/api.yaml -n dev"),
            ["k8s://current/dev/manifest/deploy/api.yaml"]
        );
        assert_eq!(
            objs("kubectl delete pods -l app=api -A"),
            ["k8s://current/*/pod/*"]
        );
    }

    #[test]
    fn kubectl_read_only_verbs_change_nothing() {
        for cmd in [
            "kubectl get deployments -n dev",
            "kubectl describe deployment/api",
            "kubectl rollout status deployment/api",
            "kubectl apply -f x.yaml --dry-run=client",
            "kubectl config view",
        ] {
            assert!(!x(cmd).changes, "{cmd}");
        }
        assert_eq!(
            objs("kubectl get deployments -n dev"),
            ["k8s://current/dev/deployment/*"]
        );
    }

    #[test]
    fn kube_context_from_env_kubeconfig_and_earlier_selection() {
        assert_eq!(
            x_env(
                "kubectl delete pod x",
                &[("KUBECONFIG", "/home/u/.kube/prod.yaml:/b")]
            )
            .objects,
            ["k8s://kubeconfig=prod/default/pod/x"]
        );
        assert_eq!(
            x_env("kubectl delete pod x", &[("KUBE_CONTEXT", "stage")]).objects,
            ["k8s://stage/default/pod/x"]
        );
        let mut e = Extractor::default();
        let argv = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        let env = Env::new();
        e.extract(&argv("kubectl config use-context prod"), "/w", &env, true);
        let c = e
            .extract(&argv("kubectl delete pod x"), "/w", &env, true)
            .unwrap();
        assert_eq!(c.objects, ["k8s://prod/default/pod/x"]);
    }

    #[test]
    fn helm_and_istioctl() {
        let c = x("helm upgrade --install api charts/api -n dev --set image.tag=2");
        assert!(c.changes);
        assert_eq!(c.objects, ["k8s://current/dev/release/api"]);
        assert!(!x("helm list -n dev").changes);
        assert_eq!(
            objs("helm uninstall a b"),
            [
                "k8s://current/default/release/a",
                "k8s://current/default/release/b"
            ]
        );
        let c = x("istioctl install --revision canary -y");
        assert!(c.changes);
        assert_eq!(c.objects, ["k8s://current/istio-system/istio/canary"]);
        assert!(!x("istioctl analyze -n dev").changes);
        assert_eq!(
            objs("istioctl x waypoint apply -n dev --name wp"),
            ["k8s://current/dev/waypoint/wp"]
        );
    }

    #[test]
    fn terraform_workspace_targets_and_selection() {
        let c = x("terraform destroy -target=terraform_data.scratch -auto-approve");
        assert!(c.changes);
        assert_eq!(c.objects, ["tf://default/terraform_data.scratch"]);
        assert_eq!(objs("terraform apply -auto-approve"), ["tf://default/*"]);
        assert!(!x("terraform plan").changes);
        assert_eq!(
            x_env(
                "terraform destroy -target aws_s3_bucket.b",
                &[("TF_WORKSPACE", "prod")]
            )
            .objects,
            ["tf://prod/aws_s3_bucket.b"]
        );
        let mut e = Extractor::default();
        let argv = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        let env = Env::new();
        let sel = e
            .extract(
                &argv("terraform workspace select staging"),
                "/w",
                &env,
                true,
            )
            .unwrap();
        assert!(!sel.changes);
        let c = e
            .extract(&argv("terraform destroy"), "/w", &env, true)
            .unwrap();
        assert_eq!(c.objects, ["tf://staging/*"]);
        // The selection is per directory.
        let c = e
            .extract(&argv("terraform destroy"), "/other", &env, true)
            .unwrap();
        assert_eq!(c.objects, ["tf://default/*"]);
        let c = e
            .extract(&argv("terraform -chdir=../w destroy"), "/x", &env, true)
            .unwrap();
        assert_eq!(
            c.objects,
            ["tf://default/*"],
            "-chdir is joined, not resolved"
        );
        assert_eq!(
            objs("terraform state rm a.b c.d"),
            ["tf://default/a.b", "tf://default/c.d"]
        );
    }

    #[test]
    fn aws_gsutil_gcloud() {
        let c = x("aws s3 rm s3://logs/2024/app.log --profile prod");
        assert!(c.changes);
        assert_eq!(c.objects, ["s3://logs/2024/app.log", "aws://prod"]);
        assert_eq!(
            objs("aws s3 rm s3://logs/2024 --recursive"),
            ["s3://logs/2024/*"]
        );
        let c = x("aws s3 cp s3://a/k ./k");
        assert!(!c.changes, "a download changes no bucket");
        assert_eq!(objs("aws s3 cp ./k s3://b/k"), ["s3://b/k"]);
        assert!(!x("aws s3 ls s3://b").changes);
        let c = x("aws s3api delete-object --bucket b --key k");
        assert!(c.changes);
        assert_eq!(c.objects, ["s3://b/k"]);
        assert!(!x("aws s3api head-object --bucket b --key k").changes);
        assert_eq!(
            x_env(
                "aws lambda delete-function --function-name f",
                &[("AWS_PROFILE", "dev")]
            )
            .objects,
            ["aws://dev/lambda/f"]
        );
        assert!(!x("aws ec2 describe-instances").changes);
        let c = x("gsutil -m rm -r gs://b/old");
        assert!(c.changes);
        assert_eq!(c.objects, ["gs://b/old/*"]);
        assert!(!x("gsutil ls gs://b").changes);
        let c = x("gcloud run services delete api --project p1 --region r");
        assert!(c.changes);
        assert_eq!(c.objects, ["gcloud://p1/run/services/api"]);
        assert!(!x("gcloud compute instances list").changes);
        assert_eq!(objs("gcloud storage rm gs://b/k"), ["gs://b/k"]);
    }

    #[test]
    fn docker_images_containers_and_references() {
        assert_eq!(image_ref("app"), "image://docker.io/library/app:latest");
        assert_eq!(image_ref("me/app:1"), "image://docker.io/me/app:1");
        assert_eq!(
            image_ref("localhost:5000/app:1.0"),
            "image://localhost:5000/app:1.0"
        );
        assert_eq!(
            image_ref("localhost:5000/app"),
            "image://localhost:5000/app:latest"
        );
        let c = x("docker tag app:1.0 localhost:5000/app:1.0");
        assert!(c.changes);
        assert_eq!(c.objects, ["image://localhost:5000/app:1.0"]);
        assert_eq!(
            objs("podman rmi app:1.0 app:2.0"),
            [
                "image://docker.io/library/app:1.0",
                "image://docker.io/library/app:2.0"
            ]
        );
        assert_eq!(
            objs("docker image rm app:1.0"),
            ["image://docker.io/library/app:1.0"]
        );
        assert_eq!(objs("docker stop web"), ["container://web"]);
        assert_eq!(
            objs("docker build -t app:2 ."),
            ["image://docker.io/library/app:2"]
        );
        assert_eq!(objs("docker image prune -a"), ["image://*"]);
        assert!(!x("docker images").changes);
        assert!(!x("docker ps -a").changes);
    }

    #[test]
    fn git_remote_operations() {
        let c = x("git push origin --delete v1.2.1");
        assert!(c.changes);
        assert_eq!(c.objects, ["git://origin/v1.2.1"]);
        assert_eq!(
            objs("git push origin :refs/tags/v1"),
            ["git://origin/refs/tags/v1"]
        );
        assert_eq!(
            objs("git -C repo push up main:release"),
            ["git://up/release"]
        );
        assert_eq!(objs("git push --tags"), ["git://origin/refs/tags/*"]);
        assert_eq!(objs("git push"), ["git://origin/HEAD"]);
        assert!(!x("git fetch origin").changes);
        assert!(!x("git push -n origin main").changes);
        let argv: Vec<String> = ["git", "commit", "-m", "x"].map(String::from).to_vec();
        assert!(Extractor::default()
            .extract(&argv, "/w", &Env::new(), true)
            .is_none());
    }

    #[test]
    fn env_wrapper_assignments() {
        let argv: Vec<String> = "env -u X KUBECONFIG=/k/prod.yaml LANG=C kubectl get pods"
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let (vars, rest) = env_wrapper(&argv).unwrap();
        assert_eq!(vars.len(), 1, "only target variables are kept");
        assert_eq!(vars["KUBECONFIG"], "/k/prod.yaml");
        assert_eq!(rest[0], "kubectl");
        assert!(env_wrapper(&argv[3..]).is_none());
    }
}
