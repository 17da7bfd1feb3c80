//! Who may read what: the one place that says which read options and which claims a caller
//! may ask for. Every transport (`GET /agents/tools`, its stream, `/mcp`, the decision
//! endpoints, the admin routes) asks here and maps the typed [`Refusal`] to its own wire (a
//! 403 problem, a JSON-RPC -32602, an AuthZEN field error); none decides access itself.
//!
//! The rules:
//! - `include_disabled` (tools agents do not see) and `explain` (why each tool is hidden) are
//!   for admins only: they reveal the catalog beyond the caller's grants;
//! - a caller may have evaluated its own claims; claims other than its own only with the admin
//!   rule; naming another subject without claims is a malformed request, not a lookup
//!   (toolgate evaluates claims; it keeps no directory of subjects);
//! - the reasons behind a decision are for admins only;
//! - the admin routes are for admins only.

use crate::domain::claims::Claims;
use crate::domain::manifest::ManifestOptions;

use super::Caller;

/// What a caller asks to read: the manifest options, and whether to explain hidden tools.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadRequest {
    pub options: ManifestOptions,
    pub explain: bool,
}

/// A read option only admins may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminOption {
    IncludeDisabled,
    Explain,
}

impl AdminOption {
    /// The option as named in queries and `_meta`.
    pub const fn as_str(self) -> &'static str {
        match self {
            AdminOption::IncludeDisabled => "include_disabled",
            AdminOption::Explain => "explain",
        }
    }
}

/// Why a caller may not have what it asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// An admin-only read option, asked for without the admin rule.
    #[error("{} requires an admin token", .0.as_str())]
    AdminOption(AdminOption),
    /// Claims other than the caller's own, without the admin rule.
    #[error(
        "evaluating claims other than the caller's own requires the admin rule; leave the \
         subject out (or give no claims) to evaluate the caller"
    )]
    ForeignClaims,
    /// A subject other than the caller, named without claims to evaluate.
    #[error(
        "is required when subject.id ('{subject}') is not the caller's sub: toolgate \
         evaluates claims, and evaluating claims other than the caller's own requires the \
         admin rule"
    )]
    ClaimsRequired { subject: String },
    /// An admin route, without the admin rule.
    #[error("this endpoint requires an admin token (see the admin rule)")]
    AdminRoute,
}

impl ReadRequest {
    /// A request for `options`, without an explanation.
    pub fn of(options: ManifestOptions) -> ReadRequest {
        ReadRequest {
            options,
            explain: false,
        }
    }

    /// Whether `caller` may make this request: the admin-only options need the admin rule.
    pub fn authorize(&self, caller: &Caller) -> Result<(), Refusal> {
        if caller.is_admin() {
            return Ok(());
        }
        if self.options.include_disabled {
            return Err(Refusal::AdminOption(AdminOption::IncludeDisabled));
        }
        if self.explain {
            return Err(Refusal::AdminOption(AdminOption::Explain));
        }
        Ok(())
    }
}

/// Whom a decision request asks about: a subject id and, optionally, its claims.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub id: &'a str,
    pub claims: Option<&'a Claims>,
}

/// The claims a decision about `subject` evaluates: the caller's own when the subject is left
/// out, names the caller (by `sub`) without claims, or gives exactly the caller's claims; the
/// claims given otherwise, which only an admin may have evaluated.
pub fn claims_for<'a>(
    subject: Option<Subject<'a>>,
    caller: &'a Caller,
) -> Result<&'a Claims, Refusal> {
    let Some(subject) = subject else {
        return Ok(caller.claims());
    };
    match subject.claims {
        Some(claims) if is_own(claims, caller.claims()) => Ok(caller.claims()),
        Some(claims) if caller.is_admin() => Ok(claims),
        Some(_) => Err(Refusal::ForeignClaims),
        None if subject.id == caller.sub() => Ok(caller.claims()),
        None => Err(Refusal::ClaimsRequired {
            subject: subject.id.to_owned(),
        }),
    }
}

/// Whether `given` are the caller's `own` claims: the same, or the same but for the claim the
/// gateway computes (`toolgate`), which the caller's token never carries itself.
fn is_own(given: &Claims, own: &Claims) -> bool {
    use crate::domain::run::GATEWAY_CLAIM;
    if given.contains_key(GATEWAY_CLAIM) || !own.contains_key(GATEWAY_CLAIM) {
        return given == own;
    }
    given.len() + 1 == own.len()
        && given
            .iter()
            .all(|(name, value)| own.get(name) == Some(value))
}

/// Whether decisions answered to `caller` carry their reasons (which policy denied, which
/// selector excluded): they describe the catalog beyond the caller's grants, so admins only.
pub fn sees_reasons(caller: &Caller) -> bool {
    caller.is_admin()
}

/// Whether `caller` may use the admin routes.
pub fn admin_route(caller: &Caller) -> Result<(), Refusal> {
    if caller.is_admin() {
        Ok(())
    } else {
        Err(Refusal::AdminRoute)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::auth::VerifiedToken;

    fn caller(sub: &str, is_admin: bool) -> Caller {
        let claims = json!({"sub": sub, "team": "x"});
        Caller::new(
            Arc::new(VerifiedToken {
                claims: claims.as_object().cloned().expect("object").into(),
                expires_at: None,
                ..Default::default()
            }),
            is_admin,
        )
    }

    /// Every combination of the admin-only options against both kinds of caller.
    #[test]
    fn admin_only_options_need_the_admin_rule() {
        for include_disabled in [false, true] {
            for explain in [false, true] {
                let request = ReadRequest {
                    options: ManifestOptions {
                        include_disabled,
                        ..ManifestOptions::default()
                    },
                    explain,
                };
                assert_eq!(request.authorize(&caller("a", true)), Ok(()));
                let agent = request.authorize(&caller("a", false));
                let expected = if include_disabled {
                    Err(Refusal::AdminOption(AdminOption::IncludeDisabled))
                } else if explain {
                    Err(Refusal::AdminOption(AdminOption::Explain))
                } else {
                    Ok(())
                };
                assert_eq!(agent, expected, "{include_disabled} {explain}");
            }
        }
    }

    #[test]
    fn foreign_claims_need_the_admin_rule() {
        let agent = caller("a", false);
        let admin = caller("root", true);
        let other = json!({"sub": "b"}).as_object().cloned().expect("object");
        let own = agent.claims().clone();
        let subject = |id, claims| Some(Subject { id, claims });
        // The caller's own claims, however they are named.
        assert_eq!(claims_for(None, &agent), Ok(agent.claims()));
        assert_eq!(claims_for(subject("a", None), &agent), Ok(agent.claims()));
        assert_eq!(
            claims_for(subject("anyone", Some(&own)), &agent),
            Ok(agent.claims())
        );
        // Someone else's.
        assert_eq!(
            claims_for(subject("b", Some(&other)), &agent),
            Err(Refusal::ForeignClaims)
        );
        assert_eq!(claims_for(subject("b", Some(&other)), &admin), Ok(&other));
        assert_eq!(
            claims_for(subject("b", None), &admin),
            Err(Refusal::ClaimsRequired {
                subject: "b".into()
            }),
            "not even an admin names a subject without claims"
        );
        assert_eq!(admin_route(&agent), Err(Refusal::AdminRoute));
        assert_eq!(admin_route(&admin), Ok(()));
    }
}
