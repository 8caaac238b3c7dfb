//! Conditional, paginated GETs: `If-None-Match` with the stored ETags and
//! `Link: rel="next"` pagination.
//!
//! What "unchanged" means for a list of several pages: the ETag of each page is stored,
//! and only a 304 on *every* stored page means the list is unchanged. If any page
//! changed, the whole list is fetched again from page 1 — the caller gets either
//! "unchanged" or a complete, consistent list, never old pages mixed with new ones.
//! An answer whose last page was full is not cached at all: a new item could land on
//! a page that did not exist yet without changing any stored page's body.

use super::Error;
use super::client::{CallMeta, Client, Fetched, MAX_PAGES, Reply, decode, describe, json_kind};
use super::etag::{EtagCache, PageTag};
use super::token::ANONYMOUS;
use reqwest::header::{ETAG, HeaderMap, LINK};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;
use std::collections::HashSet;

impl Client {
    /// GET every page of a list. With `conditional`, the stored ETags are sent and a
    /// 304 on every stored page means "unchanged" (`value: None`); see the module docs.
    pub(crate) async fn get_list(
        &self,
        url: Url,
        conditional: bool,
    ) -> Result<Fetched<Vec<Value>>, Error> {
        self.get_list_in(url, conditional, None).await
    }

    /// As [`get_list`](Self::get_list), for a listing whose pages are objects holding
    /// the items under `field` (e.g. `check_runs`).
    pub(crate) async fn get_list_in(
        &self,
        url: Url,
        conditional: bool,
        field: Option<&'static str>,
    ) -> Result<Fetched<Vec<Value>>, Error> {
        let mut meta = CallMeta::default();
        let identity = self.token_identity().await;
        let key = EtagCache::key(identity.as_deref().unwrap_or(ANONYMOUS), url.as_str());
        let stored = if conditional {
            self.lock().etags.get(&key)
        } else {
            None
        };
        if let Some(pages) = stored {
            for (i, tag) in pages.iter().enumerate() {
                let Some(page_url) = Url::parse(&tag.url).ok().filter(|u| self.same_origin(u))
                else {
                    break;
                };
                let reply = self
                    .send(Method::GET, &page_url, None, Some(&tag.etag), &mut meta)
                    .await?;
                if reply.status == StatusCode::NOT_MODIFIED {
                    if i + 1 == pages.len() {
                        return Ok(meta.finish(None, false));
                    }
                    continue;
                }
                // Page 1 changed: its body starts the new walk. A later page changed:
                // the 304'd pages before it have no body here, so start over.
                let first = (i == 0).then_some(reply);
                let walk = self.walk(&url, first, field, &mut meta).await?;
                return Ok(self.finish_walk(key, &url, walk, meta));
            }
        }
        let walk = self.walk(&url, None, field, &mut meta).await?;
        if conditional {
            return Ok(self.finish_walk(key, &url, walk, meta));
        }
        Ok(meta.finish(Some(walk.items), walk.truncated))
    }

    fn finish_walk(
        &self,
        key: String,
        url: &Url,
        walk: Walk,
        meta: CallMeta,
    ) -> Fetched<Vec<Value>> {
        let cacheable =
            walk.tags.len() == walk.pages && !walk.truncated && walk.last_page_len < per_page(url);
        let mut state = self.lock();
        if cacheable {
            state.etags.insert(key, walk.tags);
        } else {
            state.etags.remove(&key);
        }
        drop(state);
        meta.finish(Some(walk.items), walk.truncated)
    }

    /// Follows `Link: rel="next"` from `url` (or from an already-received first page).
    async fn walk(
        &self,
        url: &Url,
        mut first: Option<Reply>,
        field: Option<&'static str>,
        meta: &mut CallMeta,
    ) -> Result<Walk, Error> {
        let mut walk = Walk::default();
        let mut visited = HashSet::new();
        let mut next = Some(url.clone());
        while let Some(page_url) = next.take() {
            if walk.pages == MAX_PAGES {
                walk.truncated = true;
                break;
            }
            visited.insert(page_url.to_string());
            let what = describe(&Method::GET, &page_url);
            let reply = match first.take() {
                Some(r) => r,
                None => self.send(Method::GET, &page_url, None, None, meta).await?,
            };
            if reply.status == StatusCode::NOT_MODIFIED {
                return Err(Error::Decode {
                    what,
                    message: "304 Not Modified to a request without If-None-Match".into(),
                });
            }
            let items = match (decode::<Value>(&what, &reply)?, field) {
                (Value::Array(items), None) => items,
                (Value::Object(mut page), Some(field)) => match page.remove(field) {
                    Some(Value::Array(items)) => items,
                    _ => {
                        return Err(Error::Decode {
                            what,
                            message: format!("expected an array under `{field}`"),
                        });
                    }
                },
                (other, _) => {
                    return Err(Error::Decode {
                        what,
                        message: format!("expected a JSON array, got {}", json_kind(&other)),
                    });
                }
            };
            walk.pages += 1;
            walk.last_page_len = items.len();
            walk.items.extend(items);
            if let Some(etag) = reply.headers.get(ETAG).and_then(|v| v.to_str().ok()) {
                walk.tags.push(PageTag {
                    url: page_url.to_string(),
                    etag: etag.to_string(),
                });
            }
            if let Some(link) = next_link(&reply.headers) {
                let link_url = Url::parse(&link).map_err(|e| Error::Decode {
                    what: what.clone(),
                    message: format!("bad Link header URL: {e}"),
                })?;
                if !self.same_origin(&link_url) {
                    // The token must never be sent to another host.
                    return Err(Error::Decode {
                        what,
                        message: "refusing to follow a pagination link to another host".into(),
                    });
                }
                if !visited.contains(link_url.as_str()) {
                    next = Some(link_url);
                }
            }
        }
        Ok(walk)
    }
}

#[derive(Default)]
struct Walk {
    items: Vec<Value>,
    tags: Vec<PageTag>,
    pages: usize,
    last_page_len: usize,
    truncated: bool,
}

/// The `per_page` a URL asks for (GitHub's default is 30).
fn per_page(url: &Url) -> usize {
    url.query_pairs()
        .find(|(k, _)| k == "per_page")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(30)
}

/// The `rel="next"` target of a `Link` header. URLs may contain commas (`labels=a,b`),
/// so the header is scanned for `<…>` rather than split on commas.
pub(crate) fn next_link(headers: &HeaderMap) -> Option<String> {
    for value in headers.get_all(LINK) {
        let Ok(text) = value.to_str() else { continue };
        let mut rest = text;
        while let Some(open) = rest.find('<') {
            let after = &rest[open + 1..];
            let close = after.find('>')?;
            let target = &after[..close];
            let params_end = after[close..].find('<').map_or(after.len(), |i| close + i);
            let params = &after[close + 1..params_end];
            let is_next = params.split(';').any(|p| {
                let p = p.trim().trim_end_matches(',').trim();
                p.strip_prefix("rel=")
                    .map(|r| r.trim_matches('"').split_whitespace().any(|r| r == "next"))
                    .unwrap_or(false)
            });
            if is_next {
                return Some(target.to_string());
            }
            rest = &after[params_end..];
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn link(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(LINK, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn finds_the_next_link_among_others() {
        let h = link(
            r#"<https://api.github.com/repositories/1/issues?labels=a,b&page=1>; rel="prev", <https://api.github.com/repositories/1/issues?labels=a,b&page=3>; rel="next", <https://api.github.com/repositories/1/issues?page=9>; rel="last""#,
        );
        assert_eq!(
            next_link(&h).as_deref(),
            Some("https://api.github.com/repositories/1/issues?labels=a,b&page=3")
        );
        assert_eq!(
            next_link(&link(r#"<https://x/?page=1>; rel="first""#)),
            None
        );
        assert_eq!(next_link(&HeaderMap::new()), None);
    }
}
