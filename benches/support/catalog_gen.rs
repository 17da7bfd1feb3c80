//! A deterministic generator of realistic catalogs for the benches and the memory report.
//!
//! Everything is drawn from a tiny seeded xorshift generator written out below (no RNG
//! dependency: the benches need reproducible catalogs, not statistical quality), so the same
//! [`Spec`] always yields the same catalog, byte for byte.
//!
//! The shape follows what admins actually write:
//! - sources `svc-07-api`, `svc-12-mcp`, … of the four source types;
//! - tools `{verb}_{noun}` from 10 verbs and 60 nouns, the HTTP method following the verb,
//!   paths `/nouns/{id}`, 0–3 tags of 20, 0–2 labels of 10, a small JSON-Schema input, a few
//!   disabled, deprecated or state-bound tools;
//! - groups mixing source patterns (`svc-1*`, `svc-{03,17}-*`), name globs (`get_*`,
//!   `*_invoice*`), some `regex:` patterns, method and path patterns, required and excluded
//!   tags, required labels, explicit ids and exclusions; ~5% inactive;
//! - policies with 1–5 claim matchers: one role matcher (`roles` or `realm_access.roles`
//!   contains a role) plus conditions on `department`, `tenant`, `depth`, `scopes`,
//!   `email_verified`; priorities 0–100, ~10% with deny lists, ~5% inactive.
//!
//! To let a bench ask for "claims matching about n policies", the generator decides for every
//! condition whether the reference agent ([`Generated::claims_matching_about`]) satisfies it,
//! and remembers, per role, how many active policies that agent would then match. The bench
//! prints the count the engine actually finds, so the bookkeeping is checked every run.

#![allow(dead_code)] // each bench target uses a different part of the generator

use serde_json::{Value, json};
use toolgate::domain::claims::Claims;
use toolgate::domain::model::{
    AccessPolicy, Catalog, ClaimMatcher, Label, Selector, Source, Tool, ToolGroup,
};

/// How big a catalog to generate.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub sources: usize,
    pub tools: usize,
    pub groups: usize,
    pub policies: usize,
    pub seed: u64,
}

impl Spec {
    /// The large catalog: 10,000 tools over 50 sources, 1,000 groups, 1,000 policies.
    pub const LARGE: Spec = Spec {
        sources: 50,
        tools: 10_000,
        groups: 1_000,
        policies: 1_000,
        seed: 0x5eed_0001,
    };

    /// A typical deployment: 500 tools over 10 sources, 50 groups, 50 policies.
    pub const TYPICAL: Spec = Spec {
        sources: 10,
        tools: 500,
        groups: 50,
        policies: 50,
        seed: 0x5eed_0002,
    };
}

/// A generated catalog and what the generator knows about who matches its policies.
pub struct Generated {
    pub catalog: Catalog,
    /// Per role `role-{i}`: active policies whose role is `i` and whose other conditions hold
    /// for the reference agent.
    matching_by_role: Vec<usize>,
    /// Active role-free policies that hold for the reference agent whatever its roles.
    baseline: usize,
}

const VERBS: [(&str, &str); 10] = [
    ("get", "GET"),
    ("list", "GET"),
    ("search", "POST"),
    ("create", "POST"),
    ("update", "PUT"),
    ("patch", "PATCH"),
    ("delete", "DELETE"),
    ("export", "GET"),
    ("import", "POST"),
    ("sync", "POST"),
];

const NOUNS: [&str; 60] = [
    "invoice",
    "customer",
    "order",
    "payment",
    "refund",
    "subscription",
    "account",
    "user",
    "team",
    "project",
    "task",
    "ticket",
    "comment",
    "document",
    "file",
    "folder",
    "report",
    "dashboard",
    "metric",
    "alert",
    "incident",
    "deployment",
    "build",
    "release",
    "repository",
    "branch",
    "commit",
    "issue",
    "label",
    "milestone",
    "contact",
    "lead",
    "opportunity",
    "quote",
    "contract",
    "product",
    "price",
    "inventory",
    "shipment",
    "warehouse",
    "supplier",
    "employee",
    "timesheet",
    "expense",
    "budget",
    "forecast",
    "campaign",
    "audience",
    "email",
    "message",
    "channel",
    "meeting",
    "calendar",
    "note",
    "wiki_page",
    "secret",
    "certificate",
    "policy",
    "role",
    "webhook",
];

const TAGS: [&str; 20] = [
    "billing",
    "crm",
    "finance",
    "hr",
    "ops",
    "internal",
    "public",
    "beta",
    "pii",
    "read-only",
    "write",
    "admin",
    "reporting",
    "support",
    "sales",
    "marketing",
    "security",
    "infra",
    "analytics",
    "legacy",
];

const LABEL_COUNT: usize = 10;

const SOURCE_KINDS: [(&str, &str); 4] = [
    ("api", "openapi"),
    ("mcp", "mcp"),
    ("tools", "tool-service"),
    ("legacy", "manual"),
];

const DEPARTMENTS: [&str; 8] = [
    "engineering",
    "finance",
    "sales",
    "support",
    "hr",
    "legal",
    "marketing",
    "operations",
];

const STATES: [&str; 4] = ["triage", "research", "execute", "review"];

/// The reference agent's non-role claims; conditions are generated relative to these.
const AGENT_TENANT: &str = "tenant-03";
const AGENT_DEPARTMENT: &str = "engineering";
const AGENT_DEPTH: i64 = 1;
const AGENT_SCOPES: [&str; 3] = ["tools:read", "tools:write", "agents:spawn"];
const OTHER_SCOPES: [&str; 3] = ["tools:admin", "billing:write", "audit:read"];
const TENANTS: usize = 20;

/// xorshift64*: tiny, fast, deterministic; good enough to shuffle a test catalog.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0); the modulo bias is irrelevant here.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `low..=high`.
    pub fn between(&mut self, low: usize, high: usize) -> usize {
        low + self.below(high - low + 1)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// `count` distinct indices of `0..n`, in random order.
    pub fn distinct(&mut self, n: usize, count: usize) -> Vec<usize> {
        let mut all: Vec<usize> = (0..n).collect();
        let count = count.min(n);
        for i in 0..count {
            let j = i + self.below(n - i);
            all.swap(i, j);
        }
        all.truncate(count);
        all
    }
}

fn source_name(index: usize) -> String {
    format!(
        "svc-{index:02}-{}",
        SOURCE_KINDS[index % SOURCE_KINDS.len()].0
    )
}

fn role_count(spec: &Spec) -> usize {
    (spec.policies / 4).max(4)
}

/// Generates the catalog of `spec` (normalised, valid).
pub fn generate(spec: &Spec) -> Catalog {
    generate_with_agent(spec).catalog
}

/// Generates the catalog of `spec` and the bookkeeping behind
/// [`Generated::claims_matching_about`].
pub fn generate_with_agent(spec: &Spec) -> Generated {
    let mut rng = Rng::new(spec.seed);
    let sources = (0..spec.sources).map(generate_source).collect();
    let tools = generate_tools(spec, &mut rng);
    let labels = (0..LABEL_COUNT)
        .map(|i| Label {
            id: format!("lbl-{i}"),
            name: format!("label {i}"),
            description: String::new(),
            color: Some(format!("#{:06x}", (i * 0x1f3a5) & 0xff_ffff)),
            created_at: None,
            updated_at: None,
            created_by: None,
            updated_by: None,
        })
        .collect();
    let groups = (0..spec.groups)
        .map(|i| generate_group(spec, i, &tools, &mut rng))
        .collect();
    let mut matching_by_role = vec![0; role_count(spec)];
    let mut baseline = 0;
    let policies = (0..spec.policies)
        .map(|i| {
            let (policy, agent_role) = generate_policy(spec, i, &mut rng);
            match agent_role {
                AgentMatch::Never => {}
                AgentMatch::Always => baseline += 1,
                AgentMatch::WithRole(role) => matching_by_role[role] += 1,
            }
            policy
        })
        .collect();
    let mut catalog = Catalog {
        sources,
        tools,
        labels,
        groups,
        policies,
        revisions: Vec::new(),
    };
    catalog.normalize();
    Generated {
        catalog,
        matching_by_role,
        baseline,
    }
}

fn generate_source(index: usize) -> Source {
    let name = source_name(index);
    let source_type = SOURCE_KINDS[index % SOURCE_KINDS.len()].1;
    // What each type's validation asks for (an import never runs: nothing is fetched).
    let config = match source_type {
        "openapi" => json!({"url": format!("https://{name}.internal.example.com/openapi.json")}),
        "mcp" => json!({"url": format!("https://{name}.internal.example.com/mcp")}),
        "tool-service" => json!({
            "request-queue": format!("{name}-requests"),
            "response-queue": format!("{name}-responses"),
        }),
        _ => json!({"base_url": format!("https://{name}.internal.example.com")}),
    };
    let serde_json::Value::Object(config) = config else {
        unreachable!("every arm is an object")
    };
    Source {
        id: name.clone(),
        description: format!("Service {index:02}"),
        name,
        source_type: source_type.to_owned(),
        enabled: index % 25 != 24, // a couple of disabled sources in the large catalog
        config,
        created_at: None,
        updated_at: None,
        created_by: None,
        updated_by: None,
    }
}

fn generate_tools(spec: &Spec, rng: &mut Rng) -> Vec<Tool> {
    let per_source = spec.tools.div_ceil(spec.sources);
    let combos = VERBS.len() * NOUNS.len();
    assert!(
        per_source <= combos,
        "at most {combos} tools per source: names would repeat"
    );
    let mut tools = Vec::with_capacity(spec.tools);
    'sources: for source in 0..spec.sources {
        let source_id = source_name(source);
        for combo in rng.distinct(combos, per_source) {
            if tools.len() == spec.tools {
                break 'sources;
            }
            let (verb, method) = VERBS[combo % VERBS.len()];
            let noun = NOUNS[combo / VERBS.len()];
            tools.push(generate_tool(&source_id, verb, method, noun, rng));
        }
    }
    tools
}

fn generate_tool(source_id: &str, verb: &str, method: &str, noun: &str, rng: &mut Rng) -> Tool {
    let name = format!("{verb}_{noun}");
    let collection = format!("/{noun}s");
    let path = match verb {
        "get" | "update" | "patch" | "delete" => format!("{collection}/{{id}}"),
        "list" | "create" => collection,
        _ => format!("{collection}/:{verb}"),
    };
    let tag_count = rng_count(rng, 3);
    let tags = rng
        .distinct(TAGS.len(), tag_count)
        .into_iter()
        .map(|i| TAGS[i].to_owned())
        .collect();
    let label_count = rng_count(rng, 2);
    let label_ids = rng
        .distinct(LABEL_COUNT, label_count)
        .into_iter()
        .map(|i| format!("lbl-{i}"))
        .collect();
    let mut properties = serde_json::Map::new();
    if path.contains("{id}") {
        properties.insert(
            "id".to_owned(),
            json!({"type": "string", "description": format!("The {noun} id")}),
        );
    }
    match verb {
        "list" | "search" | "export" => {
            properties.insert(
                "limit".to_owned(),
                json!({"type": "integer", "minimum": 1, "maximum": 500, "default": 50}),
            );
            properties.insert("cursor".to_owned(), json!({"type": "string"}));
            properties.insert(
                "query".to_owned(),
                json!({"type": "string", "description": format!("Filter {noun}s")}),
            );
        }
        "create" | "update" | "patch" | "import" => {
            properties.insert(
                "body".to_owned(),
                json!({"type": "object", "description": format!("The {noun} fields"),
                       "additionalProperties": true}),
            );
        }
        _ => {}
    }
    let required: Vec<&String> = properties.keys().filter(|k| *k == "id").collect();
    let input_schema = json!({"type": "object", "properties": properties, "required": required});
    let available_in_states = rng.chance(10).then(|| {
        let count = rng.between(1, 2);
        rng.distinct(STATES.len(), count)
            .into_iter()
            .map(|i| STATES[i].to_owned())
            .collect()
    });
    Tool {
        id: String::new(),
        source_id: source_id.to_owned(),
        operation_id: name.clone(),
        description: format!("{} {noun} via {source_id}", capitalise(verb)),
        name,
        title: None,
        method: Some(method.to_owned()),
        path: Some(path),
        tags,
        label_ids,
        input_schema: input_schema.into(),
        output_schema: rng
            .chance(30)
            .then(|| json!({"type": "object", "properties": {"id": {"type": "string"}}}).into()),
        enabled: !rng.chance(5),
        deprecated: rng.chance(2),
        available_in_states,
        next_state: None,
        version: rng.chance(20).then(|| format!("v{}", rng.between(1, 3))),
        disabled_reason: None,
        service_config: Default::default(),
        arguments: Vec::new(),
        imported: None,
        definition_hash: None,
        created_at: None,
        updated_at: None,
        created_by: None,
        updated_by: None,
    }
}

/// 0..=max, skewed towards small counts.
fn rng_count(rng: &mut Rng, max: usize) -> usize {
    rng.below(max + 1).min(rng.below(max + 1) + 1)
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn group_id(index: usize) -> String {
    format!("grp-{index:04}")
}

fn generate_group(spec: &Spec, index: usize, tools: &[Tool], rng: &mut Rng) -> ToolGroup {
    // 15% explicit-only groups (a curated list), otherwise 1–2 selectors ANDed.
    let selectors = if rng.chance(15) {
        Vec::new()
    } else {
        (0..rng.between(1, 2))
            .map(|_| generate_selector(spec, rng))
            .collect()
    };
    let explicit_count = if selectors.is_empty() {
        rng.between(3, 25)
    } else {
        rng_count(rng, 6)
    };
    let pick_ids = |rng: &mut Rng, count: usize| -> Vec<String> {
        (0..count)
            .map(|_| {
                let tool = rng.pick(tools);
                Tool::default_id(&tool.source_id, &tool.operation_id)
            })
            .collect()
    };
    let explicit_tool_ids = pick_ids(rng, explicit_count);
    let excluded_count = rng_count(rng, 4);
    let excluded_tool_ids = pick_ids(rng, excluded_count);
    let subject = rng.pick(&NOUNS);
    ToolGroup {
        id: group_id(index),
        name: format!("{subject} tools {index}"),
        description: format!("Tools around {subject}s"),
        active: !rng.chance(5),
        selectors,
        explicit_tool_ids,
        excluded_tool_ids,
        created_at: None,
        updated_at: None,
        created_by: None,
        updated_by: None,
    }
}

/// How much of the catalog a selector's source pattern lets through.
#[derive(PartialEq)]
enum Scope {
    /// One or two services: `svc-07-api*`, `svc-{03,17}-*`.
    Narrow,
    /// A range or a kind of services: `svc-1*`, `*-mcp`, `regex:svc-[0-2][0-9]-.*`.
    Broad,
    /// Every service.
    Any,
}

/// A selector as admins write them: a service-wide selector may take all of its tools or one
/// verb; a selector across many services names specific operations or nouns, so that groups
/// stay in the tens to low hundreds of tools.
fn generate_selector(spec: &Spec, rng: &mut Rng) -> Selector {
    let mut selector = Selector::default();
    let scope = match rng.below(100) {
        0..55 => Scope::Narrow,
        55..75 => Scope::Broad,
        _ => Scope::Any,
    };
    selector.source_pattern = match scope {
        Scope::Narrow if rng.chance(60) => format!("{}*", source_name(rng.below(spec.sources))),
        Scope::Narrow => {
            let a = rng.below(spec.sources);
            let b = rng.below(spec.sources);
            format!("svc-{{{a:02},{b:02}}}-*")
        }
        Scope::Broad => match rng.below(3) {
            0 => format!("svc-{}*", rng.below(spec.sources.div_ceil(10))),
            1 => format!("*-{}", rng.pick(&SOURCE_KINDS).0),
            _ => format!("regex:svc-[0-{}][0-9]-.*", rng.below(3)),
        },
        Scope::Any => "*".to_owned(),
    };
    let noun = rng.pick(&NOUNS);
    let verb = rng.pick(&VERBS).0;
    selector.name_pattern = match (scope == Scope::Narrow, rng.below(6)) {
        (true, 0 | 1) => "*".to_owned(),
        (true, 2) => format!("{verb}_*"),
        (true, 3) => format!("{{{verb},{}}}_*", rng.pick(&VERBS).0),
        (_, 0 | 1) => format!("*_{noun}*"),
        (_, 2) => format!("{verb}_{noun}"),
        (_, 3) => format!("*_{{{noun},{}}}", rng.pick(&NOUNS)),
        (_, 4) => format!(
            "regex:({verb}|{})_({noun}|{})",
            rng.pick(&VERBS).0,
            rng.pick(&NOUNS)
        ),
        _ => format!("{{{verb},{}}}_{noun}", rng.pick(&VERBS).0),
    };
    if rng.chance(15) {
        selector.method_pattern =
            Some(rng.pick(&["GET", "{POST,PUT,PATCH}", "DELETE"]).to_string());
    }
    if rng.chance(10) {
        selector.path_pattern = Some(format!("/{}s*", rng.pick(&NOUNS)));
    }
    if rng.chance(30) {
        selector.required_tags = vec![rng.pick(&TAGS).to_string()];
    }
    if rng.chance(20) {
        selector.excluded_tags = vec![rng.pick(&["legacy", "beta", "admin", "pii"]).to_string()];
    }
    if rng.chance(5) {
        selector.required_label_ids = vec![format!("lbl-{}", rng.below(LABEL_COUNT))];
    }
    selector
}

/// Whether the reference agent matches a policy.
enum AgentMatch {
    Never,
    Always,
    WithRole(usize),
}

fn generate_policy(spec: &Spec, index: usize, rng: &mut Rng) -> (AccessPolicy, AgentMatch) {
    let roles = role_count(spec);
    let mut matchers = Vec::new();
    // 2% role-free policies (tenant-wide defaults), the rest keyed on one role.
    let role = (!rng.chance(2)).then(|| rng.below(roles));
    match role {
        Some(role) => {
            let path = if rng.chance(50) {
                "roles"
            } else {
                "realm_access.roles"
            };
            matchers.push(matcher(path, "contains", json!(format!("role-{role}"))));
        }
        None => {
            let tenant = rng.below(TENANTS);
            matchers.push(matcher(
                "tenant",
                "equals",
                json!(format!("tenant-{tenant:02}")),
            ));
        }
    }
    let mut agent_holds = match role {
        Some(_) => true,
        None => matchers[0].value == json!(AGENT_TENANT),
    };
    let extra = rng_count(rng, 4);
    for kind in rng.distinct(5, extra) {
        // Three in four conditions hold for the reference agent.
        let holds = rng.chance(75);
        agent_holds &= holds;
        matchers.push(condition(kind, holds, rng));
    }
    let active = !rng.chance(5);
    let group_refs = |rng: &mut Rng, count: usize| -> Vec<String> {
        (0..count)
            .map(|_| group_id(rng.below(spec.groups)))
            .collect()
    };
    let allowed_count = rng.between(1, 3);
    let allowed_group_ids = group_refs(rng, allowed_count);
    let denied_group_ids = if rng.chance(10) {
        let denied_count = rng.between(1, 2);
        group_refs(rng, denied_count)
    } else {
        Vec::new()
    };
    let agent = match (active && agent_holds, role) {
        (false, _) => AgentMatch::Never,
        (true, None) => AgentMatch::Always,
        (true, Some(role)) => AgentMatch::WithRole(role),
    };
    let policy = AccessPolicy {
        id: format!("pol-{index:04}"),
        name: format!("policy {index}"),
        description: String::new(),
        priority: rng.below(101) as i64,
        active,
        claim_matchers: matchers,
        allowed_group_ids,
        denied_group_ids,
        created_at: None,
        updated_at: None,
        created_by: None,
        updated_by: None,
    };
    (policy, agent)
}

/// One non-role condition of kind `kind` that the reference agent satisfies iff `holds`.
fn condition(kind: usize, holds: bool, rng: &mut Rng) -> ClaimMatcher {
    match kind {
        0 => {
            let department = if holds {
                AGENT_DEPARTMENT
            } else {
                DEPARTMENTS[1 + rng.below(DEPARTMENTS.len() - 1)]
            };
            matcher("department", "equals", json!(department))
        }
        1 => {
            // `tenant in [...]`: 2–4 tenants, the agent's among them iff it holds.
            let mut tenants: Vec<String> = rng
                .distinct(TENANTS, 4)
                .into_iter()
                .filter(|&t| format!("tenant-{t:02}") != AGENT_TENANT)
                .take(rng.between(1, 3))
                .map(|t| format!("tenant-{t:02}"))
                .collect();
            if holds {
                tenants.push(AGENT_TENANT.to_owned());
            }
            matcher("tenant", "in", json!(tenants))
        }
        2 => {
            if holds {
                let bound = AGENT_DEPTH + rng.below(3) as i64;
                matcher("depth", "lte", json!(bound))
            } else {
                matcher("depth", "gte", json!(AGENT_DEPTH + 1 + rng.below(2) as i64))
            }
        }
        3 => {
            let scope = if holds {
                rng.pick(&AGENT_SCOPES)
            } else {
                rng.pick(&OTHER_SCOPES)
            };
            matcher("scopes", "contains", json!(scope))
        }
        _ => matcher("email_verified", "equals", json!(holds)),
    }
}

fn matcher(path: &str, operator: &str, value: Value) -> ClaimMatcher {
    ClaimMatcher {
        json_path: path.to_owned(),
        operator: operator.to_owned(),
        value,
    }
}

impl Generated {
    /// Claims of the reference agent with just enough roles to match about `n` active
    /// policies (roles are added in order until the count reaches `n`; it may overshoot by
    /// the last role's share). A realistic token: registered claims, Keycloak-style
    /// `realm_access` / `resource_access`, scopes, tenant, department, delegation depth.
    pub fn claims_matching_about(&self, n: usize) -> Claims {
        let (roles, _) = self.roles_for(n);
        let claims = json!({
            "iss": "https://idp.example.com/realms/agents",
            "sub": "agent-7f3c2a",
            "aud": ["toolgate", "account"],
            "exp": 1_900_000_000, "iat": 1_899_996_400, "nbf": 1_899_996_400,
            "jti": "b6a1f0e2-4c55-4d6e-9d77-0e2f6f0c1a11",
            "azp": "agent-runner",
            "scope": "openid profile email tools",
            "email": "research-agent@example.com",
            "email_verified": true,
            "preferred_username": "research-agent",
            "name": "Research agent",
            "tenant": AGENT_TENANT,
            "department": AGENT_DEPARTMENT,
            "depth": AGENT_DEPTH,
            "delegation": {"parent": "agent-1a2b", "chain": ["human-42", "agent-1a2b"]},
            "scopes": AGENT_SCOPES,
            "roles": roles,
            "realm_access": {"roles": roles.iter().cloned().chain(["offline_access".to_owned(),
                "uma_authorization".to_owned()]).collect::<Vec<_>>()},
            "resource_access": {"agent-runner": {"roles": ["runner"]},
                                "account": {"roles": ["view-profile"]}},
        });
        match claims {
            Value::Object(map) => map,
            _ => unreachable!("a json! object literal is an object"),
        }
    }

    /// How many active policies the generator expects [`Self::claims_matching_about`] to match.
    pub fn expected_matches(&self, n: usize) -> usize {
        self.roles_for(n).1
    }

    /// The roles to give the reference agent, and the policies they make it match.
    fn roles_for(&self, n: usize) -> (Vec<String>, usize) {
        let mut roles = Vec::new();
        let mut matched = self.baseline;
        for (role, &count) in self.matching_by_role.iter().enumerate() {
            if matched >= n {
                break;
            }
            if count > 0 {
                roles.push(format!("role-{role}"));
                matched += count;
            }
        }
        (roles, matched)
    }
}
