//! `{name}` placeholders in argv elements: the one substitution every configured
//! command line uses — custom harnesses (SPEC §7.2), critics (§9.2) and `repos[].setup`
//! (§16.1). A leaf: pure functions over strings.
//!
//! The rules, the same for every caller:
//! - A placeholder is a token `{identifier}` (an ASCII letter or `_`, then letters,
//!   digits or `_`), so JSON or other brace text in an argument (`{"a": 1}`) is not one.
//! - Substitution happens **inside** the one element that mentions the placeholder: a
//!   value never splits an element or adds one. The result is an argv element handed to
//!   the child as bytes; no shell ever parses it.
//! - One pass: a value is copied, never scanned again, so a value that itself contains
//!   `{model}` is not substituted a second time.
//! - A token the caller's table does not name is kept literally (validation rejects
//!   unknown ones before anything runs, with [`unknown`]).
//! - A named placeholder without a value follows the caller's explicit [`Missing`] rule.

/// What an element does with a named placeholder whose value is unset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// The placeholder becomes the empty string (critics, SPEC §9.2: "unset → empty").
    Empty,
    /// The whole element is left out (custom harness argv, SPEC §7.2): write
    /// `--model={model}` as one element to make a flag optional.
    OmitElement,
}

/// The placeholders a caller knows, braces included (`"{prompt}"`), each with its value
/// (`None`: unset).
pub type Table<'a> = [(&'a str, Option<&'a str>)];

/// `template` with every placeholder of `table` substituted, in one pass; `None` when
/// the element is left out ([`Missing::OmitElement`] and a named placeholder is unset).
pub fn element(template: &str, table: &Table<'_>, missing: Missing) -> Option<String> {
    let lookup = |token: &str| table.iter().find(|(name, _)| *name == token).map(|e| e.1);
    if missing == Missing::OmitElement && tokens(template).any(|t| matches!(lookup(t), Some(None)))
    {
        return None;
    }
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        match token_at(after).and_then(|len| lookup(&after[..len]).map(|v| (len, v))) {
            Some((len, value)) => {
                out.push_str(value.unwrap_or(""));
                rest = &after[len..];
            }
            None => {
                out.push('{');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    Some(out)
}

/// Each element of `args` through [`element`], in order: never more elements than
/// `args`, and exactly as many under [`Missing::Empty`].
pub fn argv(args: &[String], table: &Table<'_>, missing: Missing) -> Vec<String> {
    args.iter()
        .filter_map(|a| element(a, table, missing))
        .collect()
}

/// The `{identifier}` tokens in `arg`, known or not, in order.
pub fn tokens(arg: &str) -> impl Iterator<Item = &str> {
    let mut rest = arg;
    std::iter::from_fn(move || {
        loop {
            let start = rest.find('{')?;
            let after = &rest[start..];
            match token_at(after) {
                Some(len) => {
                    rest = &after[len..];
                    return Some(&after[..len]);
                }
                None => rest = &after[1..],
            }
        }
    })
}

/// The tokens in `arg` outside `known`, in order.
pub fn unknown<'a>(arg: &'a str, known: &[&str]) -> Vec<&'a str> {
    tokens(arg).filter(|t| !known.contains(t)).collect()
}

/// Whether any of `args` mentions `placeholder` (braces included).
pub fn mentions(args: &[String], placeholder: &str) -> bool {
    args.iter().any(|a| tokens(a).any(|t| t == placeholder))
}

/// The length of a `{identifier}` token at the start of `s`, if there is one.
fn token_at(s: &str) -> Option<usize> {
    let body = s.strip_prefix('{')?;
    let end = body.find('}')?;
    let name = &body[..end];
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    (first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(end + 2)
}

#[cfg(test)]
#[path = "substitute_tests.rs"]
mod tests;
