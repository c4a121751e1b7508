//! kubectl, helm and istioctl: `k8s://CONTEXT/NAMESPACE/KIND/NAME`.

use super::{base, Args, CommandObjects, Env, Extractor};

impl Extractor {
    fn kube_context(&self, a: &Args, env: &Env, ctx_flag: &str, cfg_flags: &[&str]) -> String {
        if let Some(c) = a.value(&[ctx_flag]) {
            return c.to_owned();
        }
        if let Some(c) = env.get("KUBE_CONTEXT") {
            return c.clone();
        }
        let cfg = a.value_or_env(cfg_flags, env, "KUBECONFIG");
        if let Some(cfg) = cfg {
            // The first file of a KUBECONFIG list names the cluster.
            let first = cfg.split(':').next().unwrap_or(&cfg);
            let name = base(first);
            let stem = name.split('.').next().unwrap_or(name);
            return format!("kubeconfig={stem}");
        }
        self.kube_context
            .clone()
            .unwrap_or_else(|| "current".to_owned())
    }

    pub(super) fn kubectl(
        &mut self,
        args: &[String],
        env: &Env,
        record: bool,
    ) -> Option<CommandObjects> {
        const VALUED: [&str; 24] = [
            "-n",
            "--namespace",
            "--context",
            "--kubeconfig",
            "--cluster",
            "--user",
            "-f",
            "--filename",
            "-l",
            "--selector",
            "-o",
            "--output",
            "-c",
            "--container",
            "-p",
            "--patch",
            "--type",
            "--image",
            "--replicas",
            "--timeout",
            "--field-selector",
            "-k",
            "--kustomize",
            "--to-revision",
        ];
        let a = Args::parse(args, &VALUED);
        let ctx = self.kube_context(&a, env, "--context", &["--kubeconfig"]);
        let all_ns = a.has(&["-A", "--all-namespaces"]);
        let ns = if all_ns {
            "*".to_owned()
        } else {
            a.value(&["-n", "--namespace"])
                .unwrap_or("default")
                .to_owned()
        };
        let verb0 = a.pos.first()?.as_str();
        let two_word = matches!(
            verb0,
            "rollout" | "set" | "config" | "auth" | "certificate" | "create" | "plugin"
        );
        let (verb, rest): (String, &[String]) = if two_word && a.pos.len() > 1 {
            if verb0 == "create" && !a.has(&["-f", "--filename", "-k", "--kustomize"]) {
                // `create deployment NAME`: the second word is the kind.
                (verb0.to_owned(), &a.pos[1..])
            } else {
                (format!("{verb0} {}", a.pos[1]), &a.pos[2..])
            }
        } else {
            (verb0.to_owned(), &a.pos[1..])
        };
        if verb == "config use-context" && record {
            if let Some(c) = rest.first() {
                self.kube_context = Some(c.clone());
            }
        }
        // `--dry-run` is applied for every tool by `super::dry_run`.
        let read_only = matches!(
            verb.as_str(),
            "get"
                | "describe"
                | "logs"
                | "explain"
                | "diff"
                | "top"
                | "version"
                | "api-resources"
                | "api-versions"
                | "cluster-info"
                | "wait"
                | "port-forward"
                | "proxy"
                | "events"
                | "completion"
                | "kustomize"
                | "rollout status"
                | "rollout history"
                | "auth can-i"
                | "auth whoami"
        ) || verb.starts_with("config ")
            || verb.starts_with("plugin ");
        let mut objects = Vec::new();
        for f in a.values(&["-f", "--filename", "-k", "--kustomize"]) {
            objects.push(format!("k8s://{ctx}/{ns}/manifest/{f}"));
        }
        let selector = a.has(&["-l", "--selector", "--all", "--field-selector"]);
        let names: Vec<&String> = rest
            .iter()
            .filter(|s| !s.contains('=') && !s.ends_with('-') || s.contains('/'))
            .collect();
        match verb.as_str() {
            v if v.starts_with("config ") || v.starts_with("plugin ") || v.starts_with("auth ") => {
            }
            "cordon" | "uncordon" | "drain" => {
                for n in &names {
                    objects.push(format!("k8s://{ctx}/-/node/{n}"));
                }
            }
            "exec" | "attach" | "cp" | "logs" | "port-forward" => {
                if let Some(p) = names.first() {
                    let (kind, name) = p.split_once('/').unwrap_or(("pod", p));
                    objects.push(k8s_obj(&ctx, &ns, kind, name));
                }
            }
            "run" => {
                if let Some(p) = names.first() {
                    objects.push(k8s_obj(&ctx, &ns, "pod", p));
                }
            }
            "taint" => {
                if let Some(k) = names.first() {
                    if let Some((kind, name)) = k.split_once('/') {
                        objects.push(k8s_obj(&ctx, &ns, kind, name));
                    } else {
                        for n in names.iter().skip(1).filter(|n| !n.contains(':')) {
                            objects.push(k8s_obj(&ctx, &ns, k, n));
                        }
                    }
                }
            }
            _ if names.iter().any(|n| n.contains('/')) => {
                for n in &names {
                    if let Some((kind, name)) = n.split_once('/') {
                        objects.push(k8s_obj(&ctx, &ns, kind, name));
                    }
                }
            }
            _ => {
                if let Some(kinds) = names.first() {
                    for kind in kinds.split(',') {
                        if names.len() > 1 {
                            for n in &names[1..] {
                                objects.push(k8s_obj(&ctx, &ns, kind, n));
                            }
                        } else if selector || objects.is_empty() {
                            objects.push(k8s_obj(&ctx, &ns, kind, "*"));
                        }
                    }
                }
            }
        }
        Some(CommandObjects {
            tool: "kubectl",
            verb,
            changes: !read_only,
            objects,
            ..Default::default()
        })
    }

    pub(super) fn helm(&self, args: &[String], env: &Env) -> CommandObjects {
        const VALUED: [&str; 16] = [
            "-n",
            "--namespace",
            "--kube-context",
            "--kubeconfig",
            "-f",
            "--values",
            "--set",
            "--set-string",
            "--set-file",
            "--version",
            "--timeout",
            "-o",
            "--output",
            "--repo",
            "--description",
            "--revision",
        ];
        let a = Args::parse(args, &VALUED);
        let ctx = self.kube_context(&a, env, "--kube-context", &["--kubeconfig"]);
        let ns = a.value(&["-n", "--namespace"]).unwrap_or("default");
        let verb = a.pos.first().cloned().unwrap_or_default();
        let changes = matches!(
            verb.as_str(),
            "install" | "upgrade" | "uninstall" | "delete" | "del" | "un" | "rollback" | "test"
        );
        let mut objects = Vec::new();
        if matches!(
            verb.as_str(),
            "install" | "upgrade" | "rollback" | "test" | "status" | "history" | "get" | "template"
        ) {
            if let Some(n) = a.pos.get(1) {
                objects.push(format!("k8s://{ctx}/{ns}/release/{n}"));
            }
        } else if matches!(verb.as_str(), "uninstall" | "delete" | "del" | "un") {
            for n in &a.pos[1..] {
                objects.push(format!("k8s://{ctx}/{ns}/release/{n}"));
            }
        } else if verb == "list" || verb == "ls" {
            objects.push(format!("k8s://{ctx}/{ns}/release/*"));
        }
        CommandObjects {
            tool: "helm",
            verb,
            changes,
            objects,
            ..Default::default()
        }
    }

    pub(super) fn istioctl(&self, args: &[String], env: &Env) -> CommandObjects {
        const VALUED: [&str; 12] = [
            "-n",
            "--namespace",
            "--name",
            "--context",
            "-c",
            "--kubeconfig",
            "-f",
            "--filename",
            "-r",
            "--revision",
            "-s",
            "--set",
        ];
        let a = Args::parse(args, &VALUED);
        let ctx = self.kube_context(&a, env, "--context", &["-c", "--kubeconfig"]);
        let ns = a.value(&["-n", "--namespace"]).unwrap_or("default");
        let mut words: Vec<&str> = a.pos.iter().map(String::as_str).collect();
        if matches!(words.first(), Some(&"x") | Some(&"experimental")) {
            words.remove(0);
        }
        let verb = words.iter().take(2).copied().collect::<Vec<_>>().join(" ");
        let rev = a.value(&["-r", "--revision"]).unwrap_or("default");
        let mut objects = Vec::new();
        let changes = match words.as_slice() {
            ["install" | "upgrade" | "uninstall", ..] | ["manifest", "install", ..] => {
                objects.push(format!("k8s://{ctx}/istio-system/istio/{rev}"));
                true
            }
            ["tag", "set" | "remove", name, ..] => {
                objects.push(format!("k8s://{ctx}/istio-system/istio-tag/{name}"));
                true
            }
            ["waypoint", "apply" | "delete", ..] => {
                let name = a.value(&["--name"]).unwrap_or("waypoint");
                objects.push(format!("k8s://{ctx}/{ns}/waypoint/{name}"));
                true
            }
            ["admin", "log", ..] => {
                objects.push(format!("k8s://{ctx}/istio-system/istio/{rev}"));
                true
            }
            _ => false,
        };
        CommandObjects {
            tool: "istioctl",
            verb,
            changes,
            objects,
            ..Default::default()
        }
    }
}

fn k8s_kind(kind: &str) -> String {
    let k = kind.to_ascii_lowercase();
    let k = k.split('.').next().unwrap_or(&k).to_owned();
    let canon = match k.as_str() {
        "deploy" | "deployments" => "deployment",
        "po" | "pods" => "pod",
        "svc" | "services" => "service",
        "ns" | "namespaces" => "namespace",
        "cm" | "configmaps" => "configmap",
        "secrets" => "secret",
        "sts" | "statefulsets" => "statefulset",
        "ds" | "daemonsets" => "daemonset",
        "rs" | "replicasets" => "replicaset",
        "ing" | "ingresses" => "ingress",
        "jobs" => "job",
        "cj" | "cronjobs" => "cronjob",
        "no" | "nodes" => "node",
        "pvc" | "persistentvolumeclaims" => "persistentvolumeclaim",
        "pv" | "persistentvolumes" => "persistentvolume",
        "hpa" | "horizontalpodautoscalers" => "horizontalpodautoscaler",
        "sa" | "serviceaccounts" => "serviceaccount",
        "vs" | "virtualservices" => "virtualservice",
        "dr" | "destinationrules" => "destinationrule",
        "gw" | "gateways" => "gateway",
        "netpol" | "networkpolicies" => "networkpolicy",
        "crd" | "crds" | "customresourcedefinitions" => "customresourcedefinition",
        _ => return k,
    };
    canon.to_owned()
}

/// `k8s://CTX/NS/KIND/NAME`; namespaces name themselves, nodes and other
/// cluster-wide kinds use `-` as namespace.
fn k8s_obj(ctx: &str, ns: &str, kind: &str, name: &str) -> String {
    let kind = k8s_kind(kind);
    let ns = match kind.as_str() {
        "namespace" => name,
        "node"
        | "persistentvolume"
        | "clusterrole"
        | "clusterrolebinding"
        | "customresourcedefinition"
        | "storageclass" => "-",
        _ => ns,
    };
    format!("k8s://{ctx}/{ns}/{kind}/{name}")
}
