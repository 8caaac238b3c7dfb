//! Finding where a key path sits in the YAML text, so that a rule checked after
//! deserialization (a duplicate repo, a listen address that needs `exposed`) is reported
//! with the same file, line and column as a type error.
//!
//! serde_norway has no span API, but it stamps every error raised while a node is being
//! deserialized with that node's position. The locator walks the document with the real
//! parser and raises a sentinel error exactly at the target node, then reads the
//! position off the error. One parser, so positions always agree with serde's own.

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// A key path like `repos[1].name`, as the operator would write it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct KeyPath(Vec<Segment>);

impl KeyPath {
    /// The document itself.
    pub fn root() -> Self {
        Self::default()
    }

    /// Parses a dotted path with `[i]` indices (`repos[0].name`). Keys containing `.`
    /// or `[` cannot be written this way; build those with [`KeyPath::key`].
    pub fn parse(s: &str) -> Self {
        let mut path = Self::root();
        for part in s.split('.').filter(|p| !p.is_empty()) {
            let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
            if !key.is_empty() {
                path = path.key(key);
            }
            while let Some(close) = rest.find(']') {
                match rest[1..close].parse() {
                    Ok(i) => path = path.index(i),
                    Err(_) => path = path.key(&rest[..=close]),
                }
                rest = &rest[close + 1..];
            }
        }
        path
    }

    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.0.push(Segment::Key(key.into()));
        self
    }

    pub fn index(mut self, index: usize) -> Self {
        self.0.push(Segment::Index(index));
        self
    }

    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// The enclosing path (the root's parent is the root).
    pub fn parent(&self) -> Self {
        let mut segments = self.0.clone();
        segments.pop();
        Self(segments)
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(top level)");
        }
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(key) if i == 0 => f.write_str(key)?,
                Segment::Key(key) => write!(f, ".{key}")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// A 1-based line and column in the config text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    pub fn of(error: &serde_norway::Error) -> Option<Self> {
        error.location().map(|l| Self {
            line: l.line(),
            column: l.column(),
        })
    }
}

/// Unlikely to collide with any message serde or libyaml produce.
const FOUND: &str = "\u{0}the-loop locator: found\u{0}";

/// The position of the node at `path`, or of its nearest ancestor present in the text
/// (a rule about a key left at its default points at the section that omits it).
/// `None` only when the text does not parse at all.
pub fn locate(text: &str, path: &KeyPath) -> Option<Position> {
    let mut path = path.clone();
    loop {
        match locate_exact(text, &path) {
            Lookup::Found(position) => return Some(position),
            Lookup::Absent if !path.is_root() => path = path.parent(),
            Lookup::Absent | Lookup::Unparsable => return None,
        }
    }
}

enum Lookup {
    Found(Position),
    Absent,
    Unparsable,
}

fn locate_exact(text: &str, path: &KeyPath) -> Lookup {
    let de = serde_norway::Deserializer::from_str(text);
    match (Locator {
        rest: path.segments(),
    })
    .deserialize(de)
    {
        Ok(()) => Lookup::Absent,
        Err(e) if e.to_string().contains(FOUND) => match Position::of(&e) {
            Some(position) => Lookup::Found(position),
            None => Lookup::Unparsable,
        },
        Err(_) => Lookup::Unparsable,
    }
}

/// Descends along `rest`; at the end of the path, fails with [`FOUND`] from inside the
/// node's own visit so the parser stamps that node's position on the error.
struct Locator<'p> {
    rest: &'p [Segment],
}

impl<'de> DeserializeSeed<'de> for Locator<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Locator<'_> {
    fn found_or_absent<E: de::Error>(&self) -> Result<(), E> {
        if self.rest.is_empty() {
            Err(E::custom(FOUND))
        } else {
            Ok(())
        }
    }
}

impl<'de> Visitor<'de> for Locator<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.found_or_absent()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.found_or_absent()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.found_or_absent()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.found_or_absent()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.found_or_absent()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.found_or_absent()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.found_or_absent()
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.deserialize(d)
    }
    fn visit_newtype_struct<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let (wanted, rest) = match self.rest.split_first() {
            None => return Err(de::Error::custom(FOUND)),
            Some((Segment::Index(i), rest)) => (*i, rest),
            // A key into a list: nothing there.
            Some((Segment::Key(_), _)) => return drain_seq(seq),
        };
        let mut index = 0;
        loop {
            if index == wanted {
                return match seq.next_element_seed(Locator { rest })? {
                    Some(()) => drain_seq(seq),
                    None => Ok(()),
                };
            }
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (wanted, rest) = match self.rest.split_first() {
            None => return Err(de::Error::custom(FOUND)),
            Some((Segment::Key(k), rest)) => (k.as_str(), rest),
            Some((Segment::Index(_), _)) => return drain_map(map),
        };
        while let Some(key) = map.next_key::<serde_norway::Value>()? {
            if key_matches(&key, wanted) {
                map.next_value_seed(Locator { rest })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// Keys are compared as the operator wrote them: `8787` and `"8787"` are the same key.
fn key_matches(key: &serde_norway::Value, wanted: &str) -> bool {
    match key {
        serde_norway::Value::String(s) => s == wanted,
        serde_norway::Value::Number(n) => n.to_string() == wanted,
        serde_norway::Value::Bool(b) => b.to_string() == wanted,
        _ => false,
    }
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
routing:
  authorizedUsers: [alice, '']
  keywords:
    start: go
repos:
  - name: a/b
  - name: c/d
    label: x
server: {listen: '0.0.0.0:1'}
";

    fn at(path: &str) -> Option<(usize, usize)> {
        locate(TEXT, &KeyPath::parse(path)).map(|p| (p.line, p.column))
    }

    #[test]
    fn finds_scalars_in_block_and_flow_style() {
        assert_eq!(at("routing.keywords.start"), Some((4, 12)));
        assert_eq!(at("routing.authorizedUsers[1]"), Some((2, 28)));
        assert_eq!(at("repos[1].name"), Some((7, 11)));
        assert_eq!(at("repos[1].label"), Some((8, 12)));
        assert_eq!(at("server.listen"), Some((9, 18)));
    }

    #[test]
    fn an_absent_key_points_at_its_nearest_present_ancestor() {
        assert_eq!(at("repos[1].issues"), at("repos[1]"));
        assert_eq!(at("repos[7].name"), at("repos"));
        assert_eq!(at("polling.intervalSeconds"), Some((1, 1)));
    }

    #[test]
    fn unparsable_text_has_no_position() {
        // A tab cannot indent YAML: the parser fails before reaching `a.b`.
        assert_eq!(locate("a:\n\tb: 1\n", &KeyPath::parse("a.b")), None);
    }

    #[test]
    fn key_paths_round_trip_through_display() {
        for s in ["repos[1].name", "routing.keywords.start", "a[0][2].b"] {
            assert_eq!(KeyPath::parse(s).to_string(), s);
        }
        assert_eq!(KeyPath::root().to_string(), "(top level)");
        assert_eq!(
            KeyPath::parse("repos[1].name").parent(),
            KeyPath::parse("repos[1]")
        );
    }
}
