//! servebench: benchmark streaming LLM inference servers with one consistent set of metrics.
//!
//! Data flows one way: `cli` → `config` → `workload` + `load` → `client` (+ `sse`) → `record`
//! → `stats` → `results` → `report`. The simulated server in `sim` shares no code with the
//! client side, so it is an independent check of the parser and the timing.

pub mod sim;
