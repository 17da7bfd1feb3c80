//! Settings that bound what the gateway does: rate limits, the deny status of decisions, the
//! caches' byte budgets and connection limits, each from the file and the environment.

use super::*;

#[test]
fn rate_limits_come_from_file_and_environment_and_zero_turns_one_off() {
    let (_dir, path) = toml_file(
        r#"
        [rate_limits]
        agent_reads_per_sec = 7
        agent_reads_burst = 9
        streams_per_sec = 0
        admin_writes_burst = 3
        decisions_per_sec = 50
        "#,
    );
    let settings = load(
        &with_config(&path),
        &env(&[("TOOLGATE_RATE_LIMIT_AGENT_READS_BURST", "11")]),
    )
    .expect("loads");
    let limits = settings.rate_limits;
    assert_eq!(limits.agent_reads, Budget::new(7, 11), "env beats file");
    assert_eq!(limits.streams, None, "a rate of 0 is no limit");
    assert_eq!(
        limits.admin_writes,
        Budget::new(crate::config::DEFAULT_ADMIN_WRITES.per_second.get(), 3),
        "the default rate with the burst given"
    );
    assert_eq!(
        limits.decisions,
        Budget::new(50, crate::config::DEFAULT_DECISIONS.burst.get())
    );

    let cases: &[(&str, &[Pair], &str)] = &[
        (
            "zero burst",
            &[("TOOLGATE_RATE_LIMIT_STREAMS_BURST", "0")],
            "TOOLGATE_RATE_LIMIT_STREAMS_BURST",
        ),
        (
            "huge rate",
            &[("TOOLGATE_RATE_LIMIT_ADMIN_WRITES_PER_SEC", "5000000000")],
            "TOOLGATE_RATE_LIMIT_ADMIN_WRITES_PER_SEC",
        ),
        (
            "not a number",
            &[("TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC", "lots")],
            "TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC",
        ),
    ];
    for (name, pairs, setting) in cases {
        let text = load(&Overrides::default(), &env(pairs))
            .expect_err(name)
            .to_string();
        assert!(text.starts_with(setting), "{name}: {text}");
    }
    let (_dir, path) = toml_file(
        "[rate_limits]
streams_burst = 0
",
    );
    let text = load(&with_config(&path), &env(&[]))
        .expect_err("zero burst")
        .to_string();
    assert!(text.starts_with("rate_limits.streams_burst in "), "{text}");
}

#[test]
fn the_authz_deny_status_is_a_client_error_from_file_or_environment() {
    let defaults = load(&Overrides::default(), &env(&[])).expect("defaults load");
    assert_eq!(defaults.authz_deny_status, None, "a deny is 200 by default");
    let (_dir, path) = toml_file("[http]\nauthz_deny_status = 401\n");
    let from_file = load(&with_config(&path), &env(&[])).expect("loads");
    assert_eq!(from_file.authz_deny_status, Some(401));
    let from_env = load(
        &with_config(&path),
        &env(&[("TOOLGATE_AUTHZ_DENY_STATUS", "403")]),
    )
    .expect("loads");
    assert_eq!(from_env.authz_deny_status, Some(403), "env beats file");
    for bad in ["200", "302", "500", "70000", "forbidden"] {
        let text = load(
            &Overrides::default(),
            &env(&[("TOOLGATE_AUTHZ_DENY_STATUS", bad)]),
        )
        .expect_err(bad)
        .to_string();
        assert!(
            text.starts_with("TOOLGATE_AUTHZ_DENY_STATUS"),
            "{bad}: {text}"
        );
    }
    let (_dir, path) = toml_file("[http]\nauthz_deny_status = 204\n");
    let text = load(&with_config(&path), &env(&[]))
        .expect_err("a success status")
        .to_string();
    assert!(text.starts_with("http.authz_deny_status in "), "{text}");
}

#[test]
fn cache_budgets_come_from_file_and_environment() {
    let defaults = load(&Overrides::default(), &env(&[])).expect("defaults load");
    assert_eq!(defaults.cache, crate::cache::CacheBudgets::default());
    let (_dir, path) = toml_file(
        r#"
        [cache]
        manifest_bytes = 1000
        stream_queue_bytes = 65536
        stream_total_bytes = 1048576
        "#,
    );
    let settings = load(
        &with_config(&path),
        &env(&[
            ("TOOLGATE_CACHE_MANIFEST_BYTES", "0"),
            ("TOOLGATE_CACHE_ACCESS_BYTES", "2048"),
        ]),
    )
    .expect("loads");
    assert_eq!(
        settings.cache.manifest_bytes, 0,
        "the environment wins; 0 keeps nothing"
    );
    assert_eq!(settings.cache.access_bytes, 2048);
    assert_eq!(settings.cache.stream_queue_bytes, 65536);
    assert_eq!(settings.cache.stream_total_bytes, 1 << 20);
    assert_eq!(defaults.cache.stream_total_bytes, 64 << 20);
    let total = load(
        &Overrides::default(),
        &env(&[("TOOLGATE_CACHE_STREAM_TOTAL_BYTES", "0")]),
    )
    .expect_err("all streams need room for an event")
    .to_string();
    assert!(
        total.contains("TOOLGATE_CACHE_STREAM_TOTAL_BYTES"),
        "{total}"
    );
    assert!(settings.warnings.is_empty(), "{:?}", settings.warnings);
    let error = load(
        &Overrides::default(),
        &env(&[("TOOLGATE_CACHE_STREAM_QUEUE_BYTES", "0")]),
    )
    .expect_err("a stream needs room for an event")
    .to_string();
    assert!(
        error.contains("TOOLGATE_CACHE_STREAM_QUEUE_BYTES"),
        "{error}"
    );
}

#[test]
fn connection_limits_come_from_file_and_environment() {
    let defaults = load(&Overrides::default(), &env(&[])).expect("defaults load");
    assert_eq!(defaults.idle_timeout, Duration::from_secs(30));
    assert_eq!(defaults.header_timeout, Duration::from_secs(30));
    assert_eq!(
        defaults.max_connections, None,
        "derived from the file limit"
    );

    let (_dir, path) = toml_file(
        r#"
        [http]
        idle_timeout_secs = 5
        header_timeout_secs = 7
        max_connections = 300
        "#,
    );
    let from_file = load(&with_config(&path), &env(&[])).expect("file loads");
    assert_eq!(from_file.idle_timeout, Duration::from_secs(5));
    assert_eq!(from_file.header_timeout, Duration::from_secs(7));
    assert_eq!(from_file.max_connections, Some(300));

    let from_env = load(
        &with_config(&path),
        &env(&[
            ("TOOLGATE_IDLE_TIMEOUT_SECS", "2"),
            ("TOOLGATE_HEADER_TIMEOUT_SECS", "3"),
            ("TOOLGATE_MAX_CONNECTIONS", "40"),
        ]),
    )
    .expect("environment loads");
    assert_eq!(from_env.idle_timeout, Duration::from_secs(2));
    assert_eq!(from_env.header_timeout, Duration::from_secs(3));
    assert_eq!(from_env.max_connections, Some(40));
    assert!(from_env.warnings.is_empty(), "{:?}", from_env.warnings);

    for name in [
        "TOOLGATE_IDLE_TIMEOUT_SECS",
        "TOOLGATE_HEADER_TIMEOUT_SECS",
        "TOOLGATE_MAX_CONNECTIONS",
    ] {
        let error = load(&Overrides::default(), &env(&[(name, "0")]))
            .expect_err("0 is refused")
            .to_string();
        assert!(error.contains(name), "{error}");
    }
}
