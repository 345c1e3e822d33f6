//! Placeholder until the simulator lands (same API).
use std::time::Duration;
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub ttft: Duration,
    pub itl: Duration,
    pub tokens_per_chunk: u32,
    pub output_tokens: u32,
    pub usage: bool,
    pub model: String,
    pub seed: u64,
    pub faults: FaultConfig,
}
#[derive(Clone, Debug, Default)]
pub struct FaultConfig {
    pub error_rate: f64,
    pub rate_limit_rate: f64,
    pub disconnect_rate: f64,
    pub stall_rate: f64,
    pub malformed_rate: f64,
    pub stall: Duration,
}
impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            ttft: Duration::from_millis(50),
            itl: Duration::from_millis(10),
            tokens_per_chunk: 1,
            output_tokens: 128,
            usage: true,
            model: "servebench-sim".into(),
            seed: 0,
            faults: FaultConfig::default(),
        }
    }
}
impl SimConfig {
    pub fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}
pub struct SimServer {
    addr: std::net::SocketAddr,
}
impl SimServer {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
    pub async fn shutdown(self) {}
}
pub async fn spawn(_c: SimConfig, addr: std::net::SocketAddr) -> std::io::Result<SimServer> {
    Ok(SimServer { addr })
}
