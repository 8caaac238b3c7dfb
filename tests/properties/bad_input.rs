//! SPEC §14.8: bad input, at volume. Property tests seeded from the real payloads in
//! `tests/fixtures/` (copies of `../shared/fixtures/`), mutated: webhook bodies and headers
//! through the real receiver's handler, config YAML, refs and the names made from them,
//! control keywords, the excerpt and the sanitizer. Each says: no panic, a clear error,
//! nothing lost. Case counts are set per block (`ProptestConfig::with_cases`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod config;
mod mutate;
mod refs;
mod text;
mod webhook;
