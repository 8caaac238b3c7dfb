//! A harness's own protocol, where it has one, beside the paste path (issue 41): the
//! words of a delivery go in as a message of the protocol, an approval comes out as a
//! structured request and is answered as one, and a turn's start and end are told,
//! not read off a screen. One submodule per client protocol — `codex` (its app server:
//! JSON-RPC over WebSocket over a Unix socket) today; opencode's HTTP server would sit
//! beside it. Nothing here knows sessions or panes: `session` calls it.

pub mod codex;
