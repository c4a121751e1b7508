use anyhow::Result; use std::path::Path; pub fn bench(_abm: &Path, _runs: usize, _only: &[String]) -> Result<()> { anyhow::bail!("the benchmark is not written yet") }
