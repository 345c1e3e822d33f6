//! The built-in simulated LLM server.
