//! `abm doctor`: which kernel backends this machine supports, and why.

use crate::kernel::probes;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn doctor(a: DoctorArgs) -> anyhow::Result<i32> {
    let mut caps = probes::capabilities();
    caps.extend(crate::enforce::capabilities());
    caps.push(probes::Capability::from_result(
        "self_guard",
        crate::self_guard::check(),
    ));
    // `--enforce` records too: without the tracepoint backend no enforcing
    // run starts, whatever the guard backends say.
    let backend = caps
        .iter()
        .find(|c| c.name == "tracepoint_backend")
        .filter(|c| !c.available)
        .map(|c| c.detail.clone());
    if let (Some(why), Some(e)) = (backend, caps.iter_mut().find(|c| c.name == "enforce")) {
        e.available = false;
        e.detail = format!("--enforce cannot run: it needs the tracepoint backend: {why}");
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&caps)?);
    } else {
        for c in &caps {
            println!(
                "{:<20} {:<4} {}",
                c.name,
                if c.available { "yes" } else { "no" },
                c.detail
            );
        }
    }
    let tp = caps
        .iter()
        .any(|c| c.name == "tracepoint_backend" && c.available);
    Ok(if tp { 0 } else { 1 })
}
