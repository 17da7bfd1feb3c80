//! The forest's rules, case by case.
use super::*;

const ROOT: &str = "root";

fn record(id: &str, parent: Option<&RunRecord>, budget: &[(&str, u64)]) -> RunRecord {
    let mut ancestors = Vec::new();
    if let Some(parent) = parent {
        ancestors.push(parent.id.clone());
        ancestors.extend(parent.ancestors.iter().cloned());
    }
    RunRecord {
        id: id.to_owned(),
        root: parent.map_or_else(|| id.to_owned(), |p| p.root.clone()),
        parent: parent.map(|p| p.id.clone()),
        ancestors,
        depth: parent.map_or(0, |p| p.depth + 1),
        sub: "u".to_owned(),
        state: "s0".to_owned(),
        created_at: 0,
        expires_at: 100,
        ended_at: None,
        budget: budget
            .iter()
            .map(|(name, n)| {
                (
                    (*name).to_owned(),
                    Counter {
                        limit: *n,
                        left: *n,
                        from: None,
                    },
                )
            })
            .collect(),
        pinned: String::new(),
        pinned_revision: 1,
        children: Vec::new(),
        calls: VecDeque::new(),
        claims: Default::default(),
    }
}

fn left(forest: &Forest, id: &str, name: &str) -> u64 {
    forest.runs[id].budget[name].left
}

#[test]
fn children_are_carved_from_the_parent_and_give_back_what_they_leave() {
    let mut forest = Forest::default();
    let root = record(ROOT, None, &[("calls", 10)]);
    forest.start(root.clone(), 0, 10).expect("root");
    let child = record("child", Some(&root), &[("calls", 4)]);
    forest.start(child.clone(), 0, 10).expect("child");
    assert_eq!(left(&forest, ROOT, "calls"), 6);
    let greedy = record("greedy", Some(&root), &[("calls", 7)]);
    assert_eq!(
        forest.start(greedy, 0, 10),
        Err(StartRefusal::Overdrawn {
            counter: "calls".into(),
            asked: 7,
            left: 6
        })
    );
    let calls = vec!["calls".to_owned()];
    forest.begin("child", 1, None, &calls).expect("a unit");
    assert_eq!(left(&forest, "child", "calls"), 3);
    assert_eq!(left(&forest, ROOT, "calls"), 6, "the child spends its own");
    assert_eq!(forest.end("child", 2), vec!["child".to_owned()]);
    assert_eq!(left(&forest, ROOT, "calls"), 9, "3 unused come back");
    assert_eq!(
        forest.begin("child", 3, None, &calls),
        Err(CallRefusal::Ended)
    );
}

#[test]
fn absent_keys_spend_the_ancestors_counter_and_a_refusal_spends_nothing() {
    let mut forest = Forest::default();
    let root = record(ROOT, None, &[("calls", 1), ("per_tool.db:*", 5)]);
    forest.start(root.clone(), 0, 10).expect("root");
    let child = record("child", Some(&root), &[("per_tool.db:*", 2)]);
    forest.start(child, 0, 10).expect("child");
    let both = vec!["calls".to_owned(), "per_tool.db:*".to_owned()];
    forest.begin("child", 1, None, &both).expect("one call");
    assert_eq!(left(&forest, ROOT, "calls"), 0);
    assert_eq!(left(&forest, "child", "per_tool.db:*"), 1);
    assert_eq!(
        forest.begin("child", 1, None, &both),
        Err(CallRefusal::Budget {
            counter: "calls".into(),
            limit: 1
        })
    );
    assert_eq!(left(&forest, "child", "per_tool.db:*"), 1, "all or nothing");
    assert_eq!(
        forest.exhausted("child"),
        ["calls"],
        "held by the root, spent"
    );
}

#[test]
fn state_gates_and_transitions_apply_to_live_runs_only() {
    let mut forest = Forest::default();
    forest.start(record(ROOT, None, &[]), 0, 10).expect("root");
    let needs_s1 = vec!["s1".to_owned()];
    assert_eq!(
        forest.begin(ROOT, 1, Some(&needs_s1), &[]),
        Err(CallRefusal::State { state: "s0".into() })
    );
    let line = CallLine {
        tool_id: "t".into(),
        outcome: CallMark::Success,
        transition: None,
        at: 1,
    };
    assert_eq!(
        forest.finish(ROOT, 1, line.clone(), Some("s1")),
        Some("s1".to_owned())
    );
    assert!(forest.begin(ROOT, 1, Some(&needs_s1), &[]).is_ok());
    assert_eq!(forest.runs[ROOT].calls[0].transition.as_deref(), Some("s1"));
    forest.end(ROOT, 2);
    assert_eq!(
        forest.finish(ROOT, 3, line, Some("s2")),
        Some("s1".to_owned())
    );
}

#[test]
fn ending_a_parent_ends_the_subtree_and_bounds_hold() {
    let mut forest = Forest::default();
    let root = record(ROOT, None, &[("calls", 3)]);
    forest.start(root.clone(), 0, 3).expect("root");
    let child = record("child", Some(&root), &[("calls", 2)]);
    forest.start(child.clone(), 0, 3).expect("child");
    let grandchild = record("grand", Some(&child), &[("calls", 1)]);
    forest.start(grandchild, 0, 3).expect("grandchild");
    assert_eq!(
        forest.start(record("x", None, &[]), 0, 3),
        Err(StartRefusal::TooMany { max: 3 })
    );
    let mut ended = forest.end(ROOT, 5);
    ended.sort();
    assert_eq!(ended, ["child", "grand", "root"]);
    assert_eq!(forest.open(), 0);
    assert_eq!(Forest::of(forest.runs.values().cloned()).open(), 0);
    assert_eq!(left(&forest, ROOT, "calls"), 3, "everything came back up");
    assert_eq!(forest.purge(5 + 59, 60), Vec::<String>::new());
    let mut gone = forest.purge(5 + 60, 60);
    gone.sort();
    assert_eq!(gone, ["child", "grand", "root"]);
}

#[test]
fn a_record_stays_within_4_kib_whatever_its_calls_and_children() {
    let mut forest = Forest::default();
    let mut root = record(ROOT, None, &[("calls", 1_000)]);
    root.claims = crate::domain::claims::claims_of(serde_json::json!({"sub": "x".repeat(900)}));
    forest.start(root.clone(), 0, 1_000).expect("root");
    for i in 0..MAX_CHILDREN {
        let id = format!("run_{i:0>22}");
        forest
            .start(record(&id, Some(&root), &[]), 0, 1_000)
            .expect("a child");
    }
    let long = "t".repeat(200);
    for i in 0..200 {
        let line = CallLine {
            tool_id: format!("{long}{i}"),
            outcome: CallMark::Success,
            transition: None,
            at: i,
        };
        forest.finish(ROOT, 1, line, Some(&"s".repeat(128)));
    }
    let bytes = serde_json::to_vec(&forest.runs[ROOT]).expect("json").len();
    assert!(bytes <= 4096, "{bytes} bytes");
    assert_eq!(
        forest.runs[ROOT].calls.back().map(|c| c.at),
        Some(199),
        "newest kept"
    );
}

#[test]
fn expiry_ends_a_run_and_returns_its_budget() {
    let mut forest = Forest::default();
    let root = record(ROOT, None, &[("calls", 5)]);
    forest.start(root.clone(), 0, 10).expect("root");
    let mut child = record("child", Some(&root), &[("calls", 5)]);
    child.expires_at = 10;
    forest.start(child, 0, 10).expect("child");
    assert_eq!(left(&forest, ROOT, "calls"), 0);
    forest.purge(10, 600);
    assert_eq!(left(&forest, ROOT, "calls"), 5);
    assert_eq!(forest.runs["child"].ended_at, Some(10));
}
