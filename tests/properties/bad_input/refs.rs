//! Refs and the names made from them (SPEC §5.1, §14.7): any text parses to a ref that
//! reads back the same, or to an error naming the expected form; two different items
//! never share a state-file name or a tmux session name.

use proptest::prelude::*;
use the_loop::work_item::WorkItemRef;

/// Segments made of the characters that make readable names lossy.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-c._-]{1,4}",
        1 => "[A-Za-z0-9._-]{1,12}",
    ]
    .prop_filter("a ref segment", |s| s != "." && s != "..")
}

fn host() -> impl Strategy<Value = Option<String>> {
    proptest::option::weighted(
        0.3,
        prop_oneof![
            Just("ghe.example.com".to_string()),
            Just("localhost".to_string()),
            "[a-c-]{1,3}\\.[a-c.-]{1,3}",
        ],
    )
}

fn work_item() -> impl Strategy<Value = WorkItemRef> {
    (host(), segment(), segment(), 1u64..30).prop_map(|(host, owner, repo, n)| match host {
        Some(h) => WorkItemRef::on_host(&h, &owner, &repo, n),
        None => WorkItemRef::new(&owner, &repo, n),
    })
}

fn same_item(a: &WorkItemRef, b: &WorkItemRef) -> bool {
    a.number == b.number && a.same_repo(b)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    #[test]
    fn any_text_is_a_ref_that_reads_back_or_a_clear_error(text in "\\PC{0,40}|github:[a-z./_#-]{0,30}") {
        match text.parse::<WorkItemRef>() {
            Ok(r) => prop_assert_eq!(r.to_string().parse::<WorkItemRef>().unwrap(), r),
            Err(e) => prop_assert!(e.to_string().contains("github:owner/repo#N"), "{}", e),
        }
    }

    #[test]
    fn different_items_never_share_a_name(a in work_item(), b in work_item()) {
        for r in [&a, &b] {
            let slug = r.slug();
            prop_assert!(slug.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)), "{}", slug);
            prop_assert!(!r.tmux_session_name().contains(['.', ':']));
            prop_assert_eq!(r.to_string().parse::<WorkItemRef>().unwrap(), r.clone());
        }
        if !same_item(&a, &b) {
            prop_assert_ne!(a.slug().to_lowercase(), b.slug().to_lowercase(), "{} / {}", a, b);
            prop_assert_ne!(a.tmux_session_name(), b.tmux_session_name(), "{} / {}", a, b);
        }
    }
}
