//! Real Redis deployments for one test, made of `redis-server` processes on free ports: a Redis
//! Cluster of three masters (slots spread by `redis-cli --cluster create`), and a master with a
//! replica watched by three Sentinels that fail it over when it dies.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One `redis-server` (or Sentinel) process, killed when dropped.
pub struct Node {
    pub port: u16,
    /// `requirepass`, when the server has one.
    password: Option<String>,
    child: Option<Child>,
}

impl Node {
    fn spawn(args: &[String], password: Option<&str>) -> Node {
        let port = args
            .iter()
            .position(|arg| arg == "--port")
            .and_then(|at| args.get(at + 1))
            .and_then(|port| port.parse().ok())
            .expect("a --port argument");
        let child = Command::new("redis-server")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("redis-server starts (run scripts/test.sh once: it installs it)");
        let node = Node {
            port,
            password: password.map(str::to_owned),
            child: Some(child),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while node.command(&["PING"]).as_deref() != Some("PONG") {
            assert!(
                Instant::now() < deadline,
                "redis-server on {port} does not answer"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        node
    }

    /// Kills the process (SIGKILL: a crash).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// One command with `redis-cli`; `None` when the server is not there.
    pub fn command(&self, args: &[&str]) -> Option<String> {
        match &self.password {
            None => super::redis::redis_cli(self.port, args),
            Some(password) => {
                let mut with_auth = vec!["--no-auth-warning", "-a", password.as_str()];
                with_auth.extend_from_slice(args);
                super::redis::redis_cli(self.port, &with_auth)
            }
        }
    }

    /// The number of keys this node holds.
    pub fn keys(&self) -> u64 {
        self.command(&["DBSIZE"])
            .and_then(|text| text.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// A server on `port` that keeps nothing on disk, and whose working folder (where a replica
/// puts the copy it syncs from its master) is `dir`, not the repository.
fn common(port: u16, dir: &Path) -> Vec<String> {
    let port = port.to_string();
    let dir = dir.display().to_string();
    [
        "--bind",
        "127.0.0.1",
        "--port",
        &port,
        "--save",
        "",
        "--appendonly",
        "no",
        "--protected-mode",
        "no",
        "--dir",
        &dir,
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .collect()
}

fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Three masters, each owning a third of the slots.
pub struct RedisCluster {
    pub nodes: Vec<Node>,
    _dir: tempfile::TempDir,
}

impl RedisCluster {
    pub fn start() -> RedisCluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let nodes: Vec<Node> = (0..3)
            .map(|_| {
                let port = free_port();
                let mut args = common(port, dir.path());
                let config = dir.path().join(format!("nodes-{port}.conf"));
                args.extend([
                    "--cluster-enabled".to_owned(),
                    "yes".to_owned(),
                    "--cluster-config-file".to_owned(),
                    config.display().to_string(),
                    "--cluster-node-timeout".to_owned(),
                    "2000".to_owned(),
                ]);
                Node::spawn(&args, None)
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli runs");
        assert!(created.status.success(), "{created:?}");
        wait_until(
            "the cluster is ok on every node",
            Duration::from_secs(20),
            || {
                nodes.iter().all(|node| {
                    node.command(&["CLUSTER", "INFO"])
                        .is_some_and(|info| info.contains("cluster_state:ok"))
                })
            },
        );
        RedisCluster { nodes, _dir: dir }
    }

    /// `redis+cluster://` with two of the three nodes as seeds (the third is found).
    pub fn url(&self) -> String {
        format!(
            "redis+cluster://127.0.0.1:{},127.0.0.1:{}",
            self.nodes[0].port, self.nodes[1].port
        )
    }
}

/// A master, its replica, and three Sentinels that agree (quorum 2) within about a second
/// that a dead master is down.
pub struct SentinelSet {
    pub master: Node,
    pub replica: Node,
    pub sentinels: Vec<Node>,
    _dir: tempfile::TempDir,
}

pub const MASTER_NAME: &str = "toolgate-test";

impl SentinelSet {
    pub fn start() -> SentinelSet {
        SentinelSet::start_with(None)
    }

    /// With `password` as every server's and every Sentinel's `requirepass` (and the replica's
    /// and Sentinels' password for the master), as managed Sentinel deployments run.
    pub fn start_with(password: Option<&str>) -> SentinelSet {
        let dir = tempfile::tempdir().expect("temp dir");
        let auth = |mut args: Vec<String>| {
            if let Some(password) = password {
                args.extend(
                    ["--requirepass", password, "--masterauth", password].map(String::from),
                );
            }
            args
        };
        let master = Node::spawn(&auth(common(free_port(), dir.path())), password);
        let replica_port = free_port();
        let mut replica_args = auth(common(replica_port, dir.path()));
        replica_args.extend([
            "--replicaof".to_owned(),
            "127.0.0.1".to_owned(),
            master.port.to_string(),
        ]);
        let replica = Node::spawn(&replica_args, password);
        wait_until("the replica is in sync", Duration::from_secs(20), || {
            replica
                .command(&["INFO", "replication"])
                .is_some_and(|info| info.contains("master_link_status:up"))
        });
        let sentinels: Vec<Node> = (0..3)
            .map(|_| sentinel(dir.path(), master.port, password))
            .collect();
        wait_until(
            "the Sentinels know the replica and each other",
            Duration::from_secs(30),
            || {
                sentinels.iter().all(|node| {
                    node.command(&["SENTINEL", "MASTER", MASTER_NAME])
                        .is_some_and(|info| {
                            let lines: Vec<&str> = info.lines().collect();
                            let field = |name: &str| {
                                lines
                                    .iter()
                                    .position(|line| *line == name)
                                    .and_then(|at| lines.get(at + 1))
                                    .and_then(|value| value.parse::<u32>().ok())
                                    .unwrap_or(0)
                            };
                            field("num-slaves") >= 1 && field("num-other-sentinels") >= 2
                        })
                })
            },
        );
        SentinelSet {
            master,
            replica,
            sentinels,
            _dir: dir,
        }
    }

    pub fn url(&self) -> String {
        self.url_with("", "")
    }

    /// The `redis+sentinel://` URL with `credentials` (`:password@`) and a `query` (`?…`).
    pub fn url_with(&self, credentials: &str, query: &str) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        format!(
            "redis+sentinel://{credentials}{}/{MASTER_NAME}{query}",
            hosts.join(",")
        )
    }

    /// The port of the server the first Sentinel that answers names as the master.
    pub fn master_port(&self) -> Option<u16> {
        self.sentinels.iter().find_map(|node| {
            node.command(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME])
                .and_then(|text| {
                    text.lines()
                        .nth(1)
                        .and_then(|port| port.trim().parse().ok())
                })
        })
    }
}

fn sentinel(dir: &Path, master_port: u16, password: Option<&str>) -> Node {
    let port = free_port();
    let config = dir.join(format!("sentinel-{port}.conf"));
    let auth = password.map_or_else(String::new, |password| {
        format!("requirepass {password}\nsentinel auth-pass {MASTER_NAME} {password}\n")
    });
    std::fs::write(
        &config,
        auth + &format!(
            "port {port}\nbind 127.0.0.1\nprotected-mode no\ndir {}\n\
             sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} 2\n\
             sentinel down-after-milliseconds {MASTER_NAME} 1000\n\
             sentinel failover-timeout {MASTER_NAME} 5000\n\
             sentinel parallel-syncs {MASTER_NAME} 1\n",
            dir.display()
        ),
    )
    .expect("the Sentinel's config");
    Node::spawn(
        &[
            config.display().to_string(),
            "--sentinel".to_owned(),
            "--port".to_owned(),
            port.to_string(),
        ],
        password,
    )
}
