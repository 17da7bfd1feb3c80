#!/usr/bin/env python3
"""CPU cost of one cache-miss manifest request in the *reference system*, re-implemented in
Python and run on toolgate's benchmark catalog, so that a bench script can print
"reference / toolgate" for the same request.

    reference_manifest.py CATALOG.json CLAIMS.json [runs=5] [--values=python|json]
                          [--numeric-ops] [--dump FILE]

    /tmp/tgbin/catalog_json large > /tmp/large.json
    /tmp/tgbin/catalog_json large --agent-claims 26 > /tmp/claims26.json
    python3 scripts/bench/reference_manifest.py /tmp/large.json /tmp/claims26.json 5

stdout, one line:
    reference policies=N groups=N tools=N bytes=N median_ms=X p99_ms=Y min_ms=Z
(policies = active policies whose matchers all matched; groups = active groups granted by
them; tools = manifest entries; bytes = size of the serialized answer). Human lines go to
stderr.

Where the algorithm comes from
  * The reference design: /work/shared/seeds/004_010598405aa1a60d.txt ("Agent Tools Query":
    GetAgentToolsQueryHandler -> AccessResolver -> _resolve_group_tools ->
    _compute_group_tools -> ToolManifestEntry).
  * The published code of that system, github.com/bvandewe/tools-provider (snapshot
    13a8391, 2025-12-25; the seed's src/application/... paths are the pre-"multi-app"
    layout of the same files), re-implemented here, not copied:
      src/tools-provider/application/queries/agent/get_agent_tools_query.py  (handler, manifest entry)
      src/tools-provider/application/services/access_resolver.py             (claims hash, policy loop)
      src/tools-provider/domain/models/claim_matcher.py                      (ClaimMatcher)
      src/tools-provider/domain/models/tool_selector.py                      (ToolSelector)
      src/tools-provider/domain/enums/source.py                              (ClaimOperator)
      src/tools-provider/integration/repositories/motor_*_dto_repository.py  (what each query returns)
      src/tools-provider/api/controllers/agent_controller.py                 (answer shape)
    Semantics kept from that code: selectors are ANDed within a group; a pattern is "*",
    "regex:<expr>" (re.match, i.e. anchored at the start only, case-insensitive) or an
    fnmatch glob on lower-cased text (so no {a,b} alternatives); ClaimMatcher walks a dotted
    path through dicts and knows only equals, not_equals, contains, not_contains, matches,
    in, not_in, exists, comparing str(claim) with a string value; an operator outside that
    enum raises in from_dict and the resolver's try/except turns it into "policy does not
    match"; a policy without matchers never matches; the selector pass runs only over tools
    that are enabled and not deprecated (get_enabled_async: is_enabled and status
    "active"), explicit members are added and exclusions removed afterwards, then the final
    list is filtered on is_enabled only.

What is modelled (timed, per request): the claims hash the resolver computes for its cache
key; the loop over all active policies in priority order (ClaimMatcher.from_dict per
matcher, AND per policy, union of allowed_group_ids over matching policies); loading the
granted groups and keeping the active ones; for every active granted group, a group-manifest
cache miss: reload the group, take the enabled tools, ToolSelector.from_dict per selector,
match every enabled tool against all selectors, add explicit, remove excluded; union; load
the tools by id; filter enabled; map each to a ToolManifestEntry; serialize the list with
json.dumps (as the REST answer is) and encode it. Debug log messages that the reference
builds with f-strings before calling logger.debug/info/warning are built here too (the
logger is silenced, so none is written), because that formatting is CPU the reference spends
on every request; writing the warnings it logs (one per policy whose matcher raises, e.g. an
unknown operator) is I/O and not counted.
The handler is async, as in the reference; the repositories' coroutines return at once.

What is not modelled: any I/O. The repositories are in-memory lists loaded once before
timing, as if MongoDB answered instantly *and already sorted/filtered* (active policies by
priority, enabled+active tools by name): the per-call BSON decoding and DTO construction the
real Motor repositories do (get_enabled_async is called once per group, i.e. ~10,000 DTOs per
group) is NOT counted, which flatters the reference. No Redis: the claim set is never seen
and no group manifest is cached (the cache service is absent, so no cache reads or writes).
No OpenTelemetry counters, no HTTP/JWT/FastAPI layers. No deny: the reference has no
deny lists, so denied_group_ids are ignored.

Mapping toolgate's catalog onto the reference's DTOs (done once, untimed):
  tool:   id, source_id, source_name = the source's `name`, tool_name = name, operation_id,
          description, method, path, input_schema, tags, label_ids, is_enabled = enabled,
          status = "deprecated" if deprecated else "active", definition = {"version": ...}
  group:  id, name, is_active = active, selectors (each given an "id", which the reference's
          from_dict requires; method -> method_pattern), explicit/excluded ids as
          {"tool_id": id} memberships
  policy: id, name, priority, is_active = active, allowed_group_ids, claim_matchers with the
          value turned into the string the reference stores: lists (for `in`) joined with
          ","; numbers with str(); booleans with str() ("True"/"False", the text the
          reference's str(claim) comparison needs; --values=json writes "true"/"false"
          instead, which the reference never matches against a JSON boolean claim).
          Operators toolgate has and the reference lacks (gt, gte, lt, lte, not_exists) are
          passed through, and fail as they do in the reference. --numeric-ops (an extension,
          NOT the reference) evaluates gt/gte/lt/lte numerically instead, so that the same
          policies as toolgate's match and the number of groups scanned is like for like.
--dump FILE writes the matched policy ids, granted active group ids and manifest tool ids.

Standard library only; Python 3.11.
"""
import asyncio
import enum
import fnmatch
import hashlib
import json
import logging
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("reference")
log.setLevel(logging.ERROR)  # messages are built (as in the reference) but never written
log.propagate = False


# --------------------------------------------------------------------------- domain


class ClaimOperator(str, enum.Enum):
    EQUALS = "equals"
    CONTAINS = "contains"
    MATCHES = "matches"
    NOT_EQUALS = "not_equals"
    NOT_CONTAINS = "not_contains"
    IN = "in"
    NOT_IN = "not_in"
    EXISTS = "exists"


# --numeric-ops only (NOT the reference): numeric comparisons, so that the same policies as
# toolgate's match and the timed workload (groups scanned) is like for like.
_NUMERIC_OPS = {"gt": lambda a, b: a > b, "gte": lambda a, b: a >= b,
                "lt": lambda a, b: a < b, "lte": lambda a, b: a <= b}
_numeric_ops_enabled = False


@dataclass(frozen=True)
class _NumericMatcher:
    json_path: str
    operator: str
    value: str

    def matches(self, claims: dict[str, Any]) -> bool:
        node: Any = claims
        for key in self.json_path.split("."):
            if not isinstance(node, dict) or key not in node:
                return False
            node = node[key]
        if isinstance(node, (list, dict, bool)) or node is None:
            return False
        try:
            return _NUMERIC_OPS[self.operator](float(node), float(self.value))
        except ValueError:
            return False


@dataclass(frozen=True)
class ClaimMatcher:
    json_path: str
    operator: ClaimOperator
    value: str

    @classmethod
    def from_dict(cls, d: dict) -> "ClaimMatcher":
        if _numeric_ops_enabled and d["operator"] in _NUMERIC_OPS:
            return _NumericMatcher(d["json_path"], d["operator"], d["value"])  # type: ignore[return-value]
        # ClaimOperator(...) raises ValueError on an operator the reference does not know.
        return cls(json_path=d["json_path"], operator=ClaimOperator(d["operator"]), value=d["value"])

    def _lookup(self, claims: dict[str, Any]) -> Any:
        node: Any = claims
        for key in self.json_path.split("."):
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node

    def matches(self, claims: dict[str, Any]) -> bool:
        found = self._lookup(claims)
        op = self.operator
        if op == ClaimOperator.EXISTS:
            return found is not None
        if found is None:
            return False
        return self._compare(found)

    def _compare(self, found: Any) -> bool:
        op, want = self.operator, self.value
        if op == ClaimOperator.EQUALS:
            return str(found) == want
        if op == ClaimOperator.NOT_EQUALS:
            return str(found) != want
        if op == ClaimOperator.CONTAINS:
            return want in found if isinstance(found, list) else want in str(found)
        if op == ClaimOperator.NOT_CONTAINS:
            return want not in found if isinstance(found, list) else want not in str(found)
        if op == ClaimOperator.MATCHES:
            return re.match(want, str(found)) is not None
        if op == ClaimOperator.IN:
            return str(found) in [item.strip() for item in want.split(",")]
        if op == ClaimOperator.NOT_IN:
            return str(found) not in [item.strip() for item in want.split(",")]
        if op == ClaimOperator.EXISTS:
            return True
        return False


@dataclass(frozen=True)
class ToolSelector:
    id: str
    source_pattern: str = "*"
    name_pattern: str = "*"
    path_pattern: str | None = None
    method_pattern: str | None = None
    required_tags: list[str] = field(default_factory=list)
    excluded_tags: list[str] = field(default_factory=list)
    required_label_ids: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict) -> "ToolSelector":
        return cls(
            id=d["id"],
            source_pattern=d.get("source_pattern", "*"),
            name_pattern=d.get("name_pattern", "*"),
            path_pattern=d.get("path_pattern"),
            method_pattern=d.get("method_pattern"),
            required_tags=d.get("required_tags", []),
            excluded_tags=d.get("excluded_tags", []),
            required_label_ids=d.get("required_label_ids", []),
        )

    @staticmethod
    def _pattern_ok(pattern: str, text: str) -> bool:
        if pattern == "*":
            return True
        if pattern.startswith("regex:"):
            # re.match: anchored at the start only; case-insensitive.
            return re.match(pattern[len("regex:"):], text, re.IGNORECASE) is not None
        # Glob via fnmatch on lower-cased text ([seq] and ? and *, no {a,b}).
        return fnmatch.fnmatch(text.lower(), pattern.lower())

    def matches(self, source_name: str, tool_name: str, source_path: str, tags: list[str],
                method: str = "", label_ids: list[str] | None = None) -> bool:
        if not self._pattern_ok(self.source_pattern, source_name):
            return False
        if not self._pattern_ok(self.name_pattern, tool_name):
            return False
        if self.path_pattern and not self._pattern_ok(self.path_pattern, source_path):
            return False
        if self.method_pattern and not self._pattern_ok(self.method_pattern, method):
            return False
        if self.required_tags:
            have = set(tags)
            if not all(t in have for t in self.required_tags):
                return False
        if self.excluded_tags:
            have = set(tags)
            if any(t in have for t in self.excluded_tags):
                return False
        if self.required_label_ids:
            have_labels = set(label_ids or [])
            if not all(lbl in have_labels for lbl in self.required_label_ids):
                return False
        return True


# --------------------------------------------------------------------------- read models


@dataclass
class SourceToolDto:
    id: str
    source_id: str
    source_name: str
    tool_name: str
    operation_id: str
    description: str
    method: str
    path: str
    input_schema: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    is_enabled: bool = True
    status: str = "active"
    label_ids: list[str] = field(default_factory=list)
    definition: dict[str, Any] | None = None


@dataclass
class ToolGroupDto:
    id: str
    name: str
    selectors: list[dict[str, Any]] = field(default_factory=list)
    explicit_tool_ids: list[dict[str, Any]] = field(default_factory=list)
    excluded_tool_ids: list[dict[str, Any]] = field(default_factory=list)
    is_active: bool = True


@dataclass
class AccessPolicyDto:
    id: str
    name: str
    claim_matchers: list[dict[str, Any]] = field(default_factory=list)
    allowed_group_ids: list[str] = field(default_factory=list)
    priority: int = 0
    is_active: bool = True


@dataclass
class ToolManifestEntry:
    tool_id: str
    name: str
    description: str
    input_schema: dict[str, Any]
    source_id: str
    source_path: str
    tags: list[str] = field(default_factory=list)
    version: str | None = None


# In-memory repositories: MongoDB answering instantly, with the filter and sort it would
# have applied already applied at load time.


class PolicyRepository:
    def __init__(self, policies: list[AccessPolicyDto]):
        active = [p for p in policies if p.is_active]
        active.sort(key=lambda p: p.id)
        active.sort(key=lambda p: p.priority, reverse=True)  # highest first, ties by id
        self._active = active

    async def get_active_async(self) -> list[AccessPolicyDto]:
        return self._active


class GroupRepository:
    def __init__(self, groups: list[ToolGroupDto]):
        self._by_id = {g.id: g for g in groups}

    async def get_by_ids_async(self, ids: list[str]) -> list[ToolGroupDto]:
        by_id = self._by_id
        return [by_id[i] for i in ids if i in by_id]

    async def get_async(self, group_id: str) -> ToolGroupDto | None:
        return self._by_id.get(group_id)


class ToolRepository:
    def __init__(self, tools: list[SourceToolDto]):
        self._by_id = {t.id: t for t in tools}
        enabled = [t for t in tools if t.is_enabled and t.status == "active"]
        enabled.sort(key=lambda t: t.tool_name)
        self._enabled = enabled

    async def get_enabled_async(self) -> list[SourceToolDto]:
        return self._enabled

    async def get_by_ids_async(self, ids: list[str]) -> list[SourceToolDto]:
        by_id = self._by_id
        return [by_id[i] for i in ids if i in by_id]


# --------------------------------------------------------------------------- the request

_VOLATILE_CLAIMS = frozenset({"exp", "iat", "jti", "nbf", "auth_time", "session_state", "nonce"})


class AccessResolver:
    def __init__(self, policies: PolicyRepository):
        self._policies = policies
        self.matched: list[str] = []  # for the report only

    @staticmethod
    def _claims_key(claims: dict[str, Any]) -> str:
        kept = {k: v for k, v in claims.items() if k not in _VOLATILE_CLAIMS}
        text = json.dumps(kept, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    async def resolve_agent_access(self, claims: dict[str, Any]) -> set[str]:
        self._claims_key(claims)  # cache key; no cache service, so a miss by construction
        granted: set[str] = set()
        policies = await self._policies.get_active_async()
        if not policies:
            return granted
        log.debug(f"evaluating {len(policies)} active policies")
        log.debug(f"claim keys: {list(claims.keys())}")
        matched = []
        for policy in policies:
            if self._policy_matches(policy, claims):
                log.debug(f"policy '{policy.name}' (priority={policy.priority}) matched")
                granted.update(policy.allowed_group_ids)
                matched.append(policy.id)
            else:
                log.debug(f"policy '{policy.name}' did not match")
        self.matched = matched
        log.debug(f"{len(granted)} groups granted")
        return granted

    @staticmethod
    def _policy_matches(policy: AccessPolicyDto, claims: dict[str, Any]) -> bool:
        log.debug(f"policy '{policy.name}': {len(policy.claim_matchers)} matchers")
        if not policy.claim_matchers:
            return False
        for raw in policy.claim_matchers:
            try:
                matcher = ClaimMatcher.from_dict(raw)
                log.debug(f"  {matcher.json_path} {getattr(matcher.operator, 'value', matcher.operator)} '{matcher.value}'")
                if not matcher.matches(claims):
                    head = matcher.json_path.split(".")[0]
                    log.debug(f"  no match; claim '{matcher.json_path}': {claims.get(head, 'NOT FOUND')}")
                    return False
                log.debug("  match")
            except Exception as exc:  # unknown operator, non-string value, bad regex ...
                log.warning(f"matcher of policy {policy.id} failed: {exc}")
                return False
        return True


class GetAgentToolsQueryHandler:
    def __init__(self, policies: PolicyRepository, groups: GroupRepository, tools: ToolRepository):
        self._groups = groups
        self._tools = tools
        self._resolver = AccessResolver(policies)
        self.active_groups: list[str] = []  # for the report only

    async def handle_async(self, claims: dict[str, Any],
                           include_disabled_tools: bool = False) -> list[ToolManifestEntry]:
        start = time.time()
        granted = await self._resolver.resolve_agent_access(claims)
        if not granted:
            return []
        log.debug(f"access to {len(granted)} groups: {granted}")
        groups = await self._groups.get_by_ids_async(list(granted))
        log.debug(f"{len(groups)} groups found for {list(granted)}")
        for g in groups:
            log.debug(f"  group '{g.name}' (id={g.id}, is_active={g.is_active})")
        active = [g for g in groups if g.is_active]
        self.active_groups = [g.id for g in active]
        if not active:
            return []

        tool_ids: set[str] = set()
        for g in active:
            tool_ids.update(await self._resolve_group_tools(g.id))
        if not tool_ids:
            return []
        log.debug(f"{len(tool_ids)} distinct tools over {len(active)} groups")

        tools = await self._tools.get_by_ids_async(list(tool_ids))
        log.debug(f"{len(tools)} tools loaded")
        for t in tools[:2]:
            keys = list(t.definition.keys()) if t.definition else "None"
            log.debug(f"  tool '{t.tool_name}': input_schema={t.input_schema}, definition keys={keys}")
        if not include_disabled_tools:
            tools = [t for t in tools if t.is_enabled]
        entries = [self._to_entry(t) for t in tools]
        for e in entries[:2]:
            log.debug(f"  entry '{e.name}': input_schema has {len(e.input_schema)} keys")
        elapsed_ms = (time.time() - start) * 1000
        log.info(f"agent tool discovery: {len(entries)} tools in {elapsed_ms:.2f}ms")
        return entries

    async def _resolve_group_tools(self, group_id: str) -> set[str]:
        # No cache service: every group manifest is a miss and nothing is written back.
        group = await self._groups.get_async(group_id)
        if not group:
            return set()
        return await self._compute_group_tools(group)

    async def _compute_group_tools(self, group: ToolGroupDto) -> set[str]:
        members: set[str] = set()
        if group.selectors:
            candidates = await self._tools.get_enabled_async()
            try:
                selectors = [ToolSelector.from_dict(s) for s in group.selectors]
                for tool in candidates:
                    if all(
                        sel.matches(
                            source_name=tool.source_name,
                            tool_name=tool.tool_name,
                            tags=tool.tags if hasattr(tool, "tags") else [],
                            source_path=tool.path if hasattr(tool, "path") else "",
                            method=tool.method if hasattr(tool, "method") else "",
                            label_ids=tool.label_ids if hasattr(tool, "label_ids") else [],
                        )
                        for sel in selectors
                    ):
                        members.add(tool.id)
            except Exception as exc:  # e.g. an invalid regex: the group's selector part is lost
                log.warning(f"selectors of group {group.id} failed: {exc}")
        for m in group.explicit_tool_ids or ():
            tid = m.get("tool_id") if isinstance(m, dict) else m.tool_id
            if tid:
                members.add(tid)
        for m in group.excluded_tool_ids or ():
            tid = m.get("tool_id") if isinstance(m, dict) else m.tool_id
            if tid:
                members.discard(tid)
        return members

    @staticmethod
    def _to_entry(tool: SourceToolDto) -> ToolManifestEntry:
        d = tool.definition
        is_dict = isinstance(d, dict)
        schema = tool.input_schema or {}
        if not schema and d:
            schema = d.get("input_schema", {}) if is_dict else getattr(d, "input_schema", {})
        description = tool.description or ""
        if not description and d:
            description = d.get("description", "") if is_dict else getattr(d, "description", "")
        path = tool.path or ""
        if not path and d:
            path = d.get("source_path", "") if is_dict else getattr(d, "source_path", "")
        tags = tool.tags or []
        if not tags and d:
            tags = d.get("tags", []) if is_dict else getattr(d, "tags", [])
        version = None
        if d:
            version = d.get("version") if is_dict else getattr(d, "version", None)
        return ToolManifestEntry(
            tool_id=tool.id, name=tool.tool_name, description=description, input_schema=schema,
            source_id=tool.source_id, source_path=path, tags=tags, version=version,
        )


def _encode(obj: Any) -> Any:
    # What a dataclass-aware JSON encoder does with a ToolManifestEntry: its public fields.
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


# --------------------------------------------------------------------------- loading


def _value_text(value: Any, values_mode: str) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        if values_mode == "json":
            return "true" if value else "false"
        return str(value)
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return ",".join(_value_text(v, values_mode) for v in value)
    return value  # null / object: left as is; the reference's operators then fail or differ


def load(catalog: dict, values_mode: str):
    source_names = {s["id"]: s.get("name", s["id"]) for s in catalog.get("sources", [])}
    tools = []
    for t in catalog["tools"]:
        tools.append(SourceToolDto(
            id=t["id"],
            source_id=t["source_id"],
            source_name=source_names.get(t["source_id"], ""),
            tool_name=t["name"],
            operation_id=t.get("operation_id", t["name"]),
            description=t.get("description", ""),
            method=t.get("method") or "",
            path=t.get("path") or "",
            input_schema=t.get("input_schema") or {},
            tags=list(t.get("tags", [])),
            is_enabled=bool(t.get("enabled", True)),
            status="deprecated" if t.get("deprecated") else "active",
            label_ids=list(t.get("label_ids", [])),
            definition={"version": t.get("version")},
        ))
    groups = []
    for g in catalog["groups"]:
        selectors = []
        for i, s in enumerate(g.get("selectors", [])):
            sel = {"id": f"{g['id']}/{i}"}
            for key in ("source_pattern", "name_pattern", "path_pattern", "method_pattern",
                        "required_tags", "excluded_tags", "required_label_ids"):
                if key in s:
                    sel[key] = s[key]
            if "method" in s and "method_pattern" not in s:
                sel["method_pattern"] = s["method"]
            selectors.append(sel)
        groups.append(ToolGroupDto(
            id=g["id"], name=g.get("name", g["id"]), selectors=selectors,
            explicit_tool_ids=[{"tool_id": x} for x in g.get("explicit_tool_ids", [])],
            excluded_tool_ids=[{"tool_id": x} for x in g.get("excluded_tool_ids", [])],
            is_active=bool(g.get("active", True)),
        ))
    policies = []
    for p in catalog["policies"]:
        matchers = [
            {"json_path": m["json_path"], "operator": m["operator"],
             "value": _value_text(m.get("value", ""), values_mode)}
            for m in p.get("claim_matchers", [])
        ]
        policies.append(AccessPolicyDto(
            id=p["id"], name=p.get("name", p["id"]), claim_matchers=matchers,
            allowed_group_ids=list(p.get("allowed_group_ids", [])),  # denied_group_ids: no such thing
            priority=int(p.get("priority", 0)), is_active=bool(p.get("active", True)),
        ))
    return PolicyRepository(policies), GroupRepository(groups), ToolRepository(tools)


# --------------------------------------------------------------------------- main


def main(argv: list[str]) -> int:
    global _numeric_ops_enabled
    values_mode = "python"
    dump = None
    positional = []
    it = iter(argv[1:])
    for a in it:
        if a.startswith("--values="):
            values_mode = a.split("=", 1)[1]
        elif a == "--numeric-ops":
            _numeric_ops_enabled = True
        elif a == "--dump":
            dump = next(it)
        elif a.startswith("--dump="):
            dump = a.split("=", 1)[1]
        else:
            positional.append(a)
    if len(positional) not in (2, 3) or values_mode not in ("python", "json"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    catalog_path, claims_path = positional[0], positional[1]
    runs = int(positional[2].split("=")[-1]) if len(positional) == 3 else 5
    with open(catalog_path) as f:
        catalog = json.load(f)
    with open(claims_path) as f:
        claims = json.load(f)
    policies, groups, tools = load(catalog, values_mode)
    handler = GetAgentToolsQueryHandler(policies, groups, tools)

    loop = asyncio.new_event_loop()
    times_ms: list[float] = []
    body = b""
    entries: list[ToolManifestEntry] = []

    async def one() -> tuple[float, list[ToolManifestEntry], bytes]:
        t0 = time.perf_counter()
        result = await handler.handle_async(claims)
        out = json.dumps(result, default=_encode).encode()
        return (time.perf_counter() - t0) * 1000, result, out

    for i in range(max(1, runs)):
        ms, entries, body = loop.run_until_complete(one())
        times_ms.append(ms)
        print(f"run {i + 1}: {ms:.1f} ms", file=sys.stderr)
    loop.close()

    ordered = sorted(times_ms)
    p99 = ordered[min(len(ordered) - 1, max(0, -(-99 * len(ordered) // 100) - 1))]
    matched = handler._resolver.matched
    print(f"reference: {len(matched)} policies matched of {len(policies._active)} active; "
          f"{len(handler.active_groups)} active groups granted; {len(entries)} tools; "
          f"{len(body)} bytes; values={values_mode}"
          f"{'; --numeric-ops (not the reference)' if _numeric_ops_enabled else ''}", file=sys.stderr)
    if dump:
        with open(dump, "w") as f:
            json.dump({"policies": matched, "groups": sorted(handler.active_groups),
                       "tools": sorted(e.tool_id for e in entries)}, f)
    print(f"reference policies={len(matched)} groups={len(handler.active_groups)} "
          f"tools={len(entries)} bytes={len(body)} median_ms={statistics.median(times_ms):.2f} "
          f"p99_ms={p99:.2f} min_ms={ordered[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
