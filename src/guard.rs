//! The two guards that run before anything is pasted (SPEC §3): the self-comment marker
//! and the authorized-actor allowlist. Pure functions.

/// The hidden marker every comment the tool composes carries. It never changes.
pub const MARKER: &str = "<!-- the-loop:agent-comment -->";

/// The short visible line placed above the marker.
pub const ATTRIBUTION: &str = "🤖 _posted by the-loop_";

/// True iff `body` contains the marker (exact, case-sensitive, anywhere).
pub fn is_self_authored(body: Option<&str>) -> bool {
    body.is_some_and(|b| b.contains(MARKER))
}

/// Stamps a comment the tool composed: attribution line, then the marker last.
/// Idempotent: a body that already carries the marker is returned unchanged.
pub fn mark_self_authored(body: &str) -> String {
    if body.contains(MARKER) {
        return body.to_string();
    }
    format!("{}\n\n{ATTRIBUTION}\n{MARKER}\n", body.trim_end())
}
