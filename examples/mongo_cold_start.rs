//! Cold start of a gateway whose catalog is in MongoDB: the large benchmark catalog (10,000
//! tools over 50 sources, 1,000 groups, 1,000 policies) is stored once, then gateways are
//! started on it N times; each run is timed from `server::start` to the moment it returns,
//! i.e. listening with the snapshot loaded from MongoDB and compiled (migrations checked too).
//! The store's `load` alone is timed as well, to show how much of that is MongoDB.
//!
//! Starts its own nx-27017 from `.venv-mongo` (run `scripts/test.sh` once to install it),
//! unless `TOOLGATE_TEST_MONGODB_URI` names a server; nothing else is written there but a
//! fresh database.
//!
//!     cargo run --release --example mongo_cold_start [N=5]

#[path = "../benches/support/catalog_gen.rs"]
mod catalog_gen;
#[allow(dead_code)] // the example uses the start-up half of the test helper
#[path = "../tests/support/mongo.rs"]
mod mongo;

use std::time::{Duration, Instant};

use toolgate::config::{Secret, Settings};
use toolgate::server::start;
use toolgate::store::mongo::{CommitPathChoice, MongoStore};
use toolgate::store::{CatalogStore, Change, Commit};

fn config(uri: &str, database: &str) -> Settings {
    Settings {
        listen: "127.0.0.1:0".parse().expect("address"),
        mongodb_uri: Some(Secret::new(uri)),
        mongodb_database: database.to_owned(),
        jwt_secret: Some(Secret::new("cold-start-example-secret-of-32-bytes")),
        ..Settings::default()
    }
}

fn ms(duration: Duration) -> String {
    format!("{:.0} ms", duration.as_secs_f64() * 1e3)
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5)
        .max(1);
    let server = mongo::MongoServer::start().await;
    let database = mongo::database_name("cold_start");
    let mut catalog = catalog_gen::generate(&catalog_gen::Spec::LARGE);
    catalog.normalize();
    catalog.sort_by_id();

    let store = MongoStore::open(server.uri(), &database, CommitPathChoice::Detect)
        .await
        .expect("open the store");
    store.migrate().await.expect("migrate");
    let seeding = Instant::now();
    store
        .commit(Commit {
            expected_revision: 0,
            changes: vec![Change::ReplaceAll(catalog.clone())],
            audit: Vec::new(),
        })
        .await
        .expect("store the catalog");
    println!(
        "stored {} tools, {} groups, {} policies in MongoDB ({:?} path) in {}",
        catalog.tools.len(),
        catalog.groups.len(),
        catalog.policies.len(),
        store.commit_path(),
        ms(seeding.elapsed())
    );

    let mut loads = Vec::with_capacity(runs);
    let mut starts = Vec::with_capacity(runs);
    for _ in 0..runs {
        let fresh = MongoStore::open(server.uri(), &database, CommitPathChoice::Detect)
            .await
            .expect("open the store");
        let loading = Instant::now();
        let loaded = fresh.load().await.expect("load");
        loads.push(loading.elapsed());
        assert_eq!(loaded.catalog.tools.len(), catalog.tools.len());

        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let starting = Instant::now();
        let running = start(config(server.uri(), &database), async move {
            let _ = stopped.await;
        })
        .await
        .expect("the gateway starts");
        starts.push(starting.elapsed());
        assert_eq!(running.state.app.revision(), 1);
        let _ = stop.send(());
        let _ = running.task.await;
    }
    println!(
        "MongoStore::load of the catalog: median {} (min {}) over {runs} runs",
        ms(median(&mut loads)),
        ms(loads[0])
    );
    println!(
        "cold start (server::start → listening, snapshot compiled): median {} (min {}) over {runs} runs",
        ms(median(&mut starts)),
        ms(starts[0])
    );
}
