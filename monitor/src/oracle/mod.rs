//! Oracle (stub: to be implemented).
pub mod cmd {
    #[derive(Debug, clap::Args)]
    pub struct OracleArgs {}
    #[derive(Debug, clap::Args)]
    pub struct ScoreArgs {}
    pub fn oracle(_a: OracleArgs) -> anyhow::Result<i32> {
        anyhow::bail!("not implemented")
    }
    pub fn score(_a: ScoreArgs) -> anyhow::Result<i32> {
        anyhow::bail!("not implemented")
    }
}
