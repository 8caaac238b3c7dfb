//! The pending review of each work item: `reviews/<slug>.json` under the state root,
//! written atomically and private (0600 in a 0700 directory), each read-modify-write
//! under `reviews/<slug>.lock` (several screens may edit it). Comments leave it only
//! when sent or discarded, by id, so an edit racing a send never loses a comment the
//! send did not carry. A file that does not parse is moved aside (and reported), never
//! silently emptied.

use super::ReviewComment;
use crate::fsutil::{StateRead, atomic_write_json, read_json_state};
use crate::paths::StatePaths;
use crate::work_item::WorkItemRef;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::PathBuf;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    work_item: String,
    comments: Vec<ReviewComment>,
}

/// The pending reviews under one state root.
#[derive(Debug, Clone)]
pub struct ReviewStore {
    dir: PathBuf,
}

impl ReviewStore {
    pub fn new(paths: &StatePaths) -> Self {
        Self {
            dir: paths.root.join("reviews"),
        }
    }

    pub fn path(&self, item: &WorkItemRef) -> PathBuf {
        self.dir.join(format!("{}.json", item.slug()))
    }

    /// The pending comments on `item`, oldest first.
    pub fn load(&self, item: &WorkItemRef) -> io::Result<Vec<ReviewComment>> {
        match read_json_state::<File>(&self.path(item))? {
            StateRead::Missing => Ok(Vec::new()),
            StateRead::Ok(file) => Ok(file.comments),
            StateRead::Corrupt { moved_to, error } => Err(io::Error::other(format!(
                "the pending review of {item} did not parse ({error}); it was moved to {}",
                moved_to.display()
            ))),
        }
    }

    /// Adds a comment at the end.
    pub fn add(&self, item: &WorkItemRef, comment: ReviewComment) -> io::Result<()> {
        self.edit(item, |comments| {
            if !comments.iter().any(|c| c.id == comment.id) {
                comments.push(comment);
            }
        })
    }

    /// Removes the comments named (sent or discarded); returns how many are left.
    pub fn remove(&self, item: &WorkItemRef, ids: &[String]) -> io::Result<usize> {
        let mut left = 0;
        self.edit(item, |comments| {
            comments.retain(|c| !ids.contains(&c.id));
            left = comments.len();
        })?;
        Ok(left)
    }

    fn edit(&self, item: &WorkItemRef, f: impl FnOnce(&mut Vec<ReviewComment>)) -> io::Result<()> {
        let _one = crate::fsutil::lock_exclusive(&self.dir.join(format!("{}.lock", item.slug())))?;
        let mut comments = self.load(item)?;
        f(&mut comments);
        let path = self.path(item);
        if comments.is_empty() {
            return match std::fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
        }
        atomic_write_json(
            &path,
            &File {
                work_item: item.to_string(),
                comments,
            },
        )
    }
}
