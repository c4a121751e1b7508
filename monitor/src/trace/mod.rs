//! Trusted trace (stub: to be implemented).
pub mod cmd {
    #[derive(Debug, clap::Args)]
    pub struct VerifyArgs {}
    pub fn verify(_a: VerifyArgs) -> anyhow::Result<i32> {
        anyhow::bail!("not implemented")
    }
}
