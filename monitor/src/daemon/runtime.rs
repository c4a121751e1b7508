//! What the container runtimes say about a container: its name and labels,
//! from the state files they keep on the host (Docker's
//! `/var/lib/docker/containers/<id>/config.v2.json`, Podman's
//! `/var/lib/containers/storage/overlay-containers/containers.json`).
//! Read directly: fast enough to decide, while the container's cgroup is
//! new, whether a waiting target names it.
use std::{collections::BTreeMap, path::Path};

use serde_json::Value;

const DOCKER_ROOT: &str = "/var/lib/docker/containers";
const PODMAN_CONTAINERS: &str = "/var/lib/containers/storage/overlay-containers/containers.json";

/// A container as its runtime describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Container {
    pub id: String,
    pub names: Vec<String>,
    pub labels: BTreeMap<String, String>,
}

pub use crate::target_spec::Selector;

impl Selector {
    pub fn matches(&self, c: &Container) -> bool {
        match self {
            Selector::Id(p) => c.id.starts_with(p.as_str()),
            Selector::Name(n) => c.names.iter().any(|x| x == n),
            Selector::Label(k, v) => c.labels.get(k) == Some(v),
        }
    }
}

fn docker(dir: &Path) -> Option<Container> {
    let text = std::fs::read_to_string(dir.join("config.v2.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let id = v["ID"].as_str()?.to_owned();
    let names = v["Name"]
        .as_str()
        .map(|n| vec![n.trim_start_matches('/').to_owned()])
        .unwrap_or_default();
    let labels = v["Config"]["Labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    Some(Container { id, names, labels })
}

fn podman_all() -> Vec<Container> {
    let Ok(text) = std::fs::read_to_string(PODMAN_CONTAINERS) else {
        return Vec::new();
    };
    let Ok(Value::Array(list)) = serde_json::from_str::<Value>(&text) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|c| {
            Some(Container {
                id: c["id"].as_str()?.to_owned(),
                names: c["names"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|n| n.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
                labels: BTreeMap::new(),
            })
        })
        .collect()
}

/// The container with this full id, if a runtime knows it.
pub fn by_id(id: &str) -> Option<Container> {
    docker(&Path::new(DOCKER_ROOT).join(id))
        .or_else(|| podman_all().into_iter().find(|c| c.id == id))
}

/// Every container the runtimes know (running or not).
pub fn all() -> Vec<Container> {
    let mut out: Vec<Container> = std::fs::read_dir(DOCKER_ROOT)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| docker(&e.path()))
                .collect()
        })
        .unwrap_or_default();
    out.extend(podman_all());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        let c = Container {
            id: "0123456789abcdef0123".into(),
            names: vec!["task-7".into()],
            labels: [("trial".to_owned(), "7".to_owned())].into(),
        };
        assert!(Selector::parse("0123456789ab").unwrap().matches(&c));
        assert!(Selector::parse("task-7").unwrap().matches(&c));
        assert!(!Selector::parse("task-8").unwrap().matches(&c));
        assert!(Selector::parse("trial=7").unwrap().matches(&c));
        assert!(!Selector::parse("trial=8").unwrap().matches(&c));
        assert!(Selector::parse("bad name")
            .unwrap_err()
            .to_string()
            .contains("label KEY=VALUE"));
        assert!(Selector::parse("=x").is_err());
    }

    #[test]
    fn docker_state_file() {
        let d = std::env::temp_dir().join(format!("abm-rt-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("config.v2.json"),
            r#"{"ID":"abc","Name":"/web","Config":{"Labels":{"app":"x"}}}"#,
        )
        .unwrap();
        let c = docker(&d).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(c.id, "abc");
        assert_eq!(c.names, vec!["web".to_owned()]);
        assert_eq!(c.labels.get("app").map(String::as_str), Some("x"));
    }
}
