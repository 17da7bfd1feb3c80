//! Runs every case of `../shared/conformance/*.json` straight against the decision core.

mod support;

use toolgate::domain::snapshot::Snapshot;
use toolgate::domain::validate::validate;

#[test]
fn conformance_cases_hold_against_the_core() {
    let suites = support::conformance::load_all();
    assert!(!suites.is_empty(), "no conformance suites found");
    let mut checks = 0;
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
        }
    }
    assert!(checks > 0);
}
