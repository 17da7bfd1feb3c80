//! Runs every case of `tests/conformance/*.json` straight against the decision core, and keeps
//! that copy equal to the team's shared cases when they are beside the repository.

use crate::support;

use toolgate::domain::snapshot::Snapshot;
use toolgate::domain::validate::validate;

#[test]
fn conformance_cases_hold_against_the_core() {
    let suites = support::conformance::load_all();
    assert!(!suites.is_empty(), "no conformance suites found");
    let mut checks = 0;
    let mut non_empty = 0;
    for suite in suites {
        let mut catalog = suite.catalog.clone();
        catalog.normalize();
        let errors = validate(&catalog);
        assert!(
            errors.is_empty(),
            "{}: catalog invalid: {errors:?}",
            suite.name
        );
        let snapshot = Snapshot::compile(catalog, 1).expect("valid catalogs compile");
        for check in &suite.checks {
            let manifest = snapshot.manifest(&check.claims, &check.options());
            let got: Vec<&str> = manifest.tool_ids().collect();
            assert_eq!(
                got, check.expect_tool_ids,
                "{} / {}",
                suite.name, check.name
            );
            checks += 1;
            non_empty += usize::from(!check.expect_tool_ids.is_empty());
        }
    }
    // Agreement on nothing but empty manifests would prove nothing.
    assert!(
        non_empty * 2 >= checks,
        "{non_empty} of {checks} checks expect tools"
    );
}

#[test]
fn the_repository_copy_equals_the_shared_cases_when_they_are_here() {
    let shared = support::conformance::shared_dir();
    if !shared.is_dir() {
        println!("{} is not here: nothing to compare", shared.display());
        return;
    }
    let name = |path: &std::path::PathBuf| path.file_name().map(|n| n.to_owned());
    let ours = support::conformance::case_files(&support::conformance::dir());
    let theirs = support::conformance::case_files(&shared);
    assert_eq!(
        ours.iter().map(name).collect::<Vec<_>>(),
        theirs.iter().map(name).collect::<Vec<_>>(),
        "run scripts/sync-conformance.sh"
    );
    for (ours, theirs) in ours.iter().zip(&theirs) {
        let read = |path: &std::path::PathBuf| std::fs::read(path).expect("readable");
        assert!(
            read(ours) == read(theirs),
            "{} differs from {}: run scripts/sync-conformance.sh",
            ours.display(),
            theirs.display()
        );
    }
}
