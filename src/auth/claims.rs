//! The registered-claim rules applied after the signature is verified: `exp`, `nbf`, `iss`,
//! `aud` (RFC 7519 §4.1).

use serde_json::{Map, Value};

use super::AuthError;

/// The configured expectations on registered claims.
#[derive(Debug, Clone)]
pub(crate) struct ClaimRules {
    /// Required `iss`, if any.
    pub issuer: Option<String>,
    /// Required member of `aud`, if any.
    pub audience: Option<String>,
    /// Tolerated clock skew in seconds.
    pub leeway_secs: i64,
    /// A token without `exp` is refused.
    pub require_exp: bool,
}

/// When a token that passed [`ClaimRules::check`] is acceptable: from `nbf` minus the leeway
/// up to, not including, `exp` plus the leeway. Its issuer and audience cannot change, so the
/// window is all there is to check again when the same token comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Validity {
    /// The `exp` claim in unix seconds, if present.
    pub expires_at: Option<i64>,
    from: i64,
    until: i64,
}

impl Validity {
    /// Whether the token is acceptable at unix time `now`.
    pub(super) fn contains(&self, now: i64) -> bool {
        self.from <= now && now < self.until
    }
}

impl ClaimRules {
    /// Checks the claims at unix time `now` and returns when they are valid.
    ///
    /// `exp` is required unless `require_exp` is off, and the token must not be past it by
    /// more than the leeway; `nbf`, when present, likewise. `iss` and `aud` must be present and match only when
    /// configured. A registered claim with the wrong JSON type is [`AuthError::Malformed`].
    pub(super) fn check(
        &self,
        claims: &Map<String, Value>,
        now: i64,
    ) -> Result<Validity, AuthError> {
        let expires_at = claims.get("exp").map(numeric_date).transpose()?;
        if self.require_exp && expires_at.is_none() {
            return Err(AuthError::MissingExpiry);
        }
        let until = expires_at.map_or(i64::MAX, |exp| exp.saturating_add(self.leeway_secs));
        if now >= until {
            return Err(AuthError::Expired);
        }
        let not_before = claims.get("nbf").map(numeric_date).transpose()?;
        let from = not_before.map_or(i64::MIN, |nbf| nbf.saturating_sub(self.leeway_secs));
        if now < from {
            return Err(AuthError::NotYetValid);
        }
        if let Some(issuer) = &self.issuer
            && claims.get("iss").and_then(Value::as_str) != Some(issuer.as_str())
        {
            return Err(AuthError::WrongIssuer);
        }
        if let Some(audience) = &self.audience
            && !audience_contains(claims.get("aud"), audience)
        {
            return Err(AuthError::WrongAudience);
        }
        Ok(Validity {
            expires_at,
            from,
            until,
        })
    }
}

/// A NumericDate: seconds since the epoch, possibly fractional (truncated towards the past).
fn numeric_date(value: &Value) -> Result<i64, AuthError> {
    if let Some(seconds) = value.as_i64() {
        return Ok(seconds);
    }
    match value.as_f64() {
        // `as` saturates, which is the right answer for absurdly distant dates.
        Some(seconds) if seconds.is_finite() => Ok(seconds.floor() as i64),
        _ => Err(AuthError::Malformed),
    }
}

/// `aud` is either one string or an array of strings (RFC 7519 §4.1.3).
fn audience_contains(aud: Option<&Value>, audience: &str) -> bool {
    match aud {
        Some(Value::String(single)) => single == audience,
        Some(Value::Array(many)) => many.iter().any(|item| item.as_str() == Some(audience)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: i64 = 1_800_000_000;

    /// A case name, the claims, and the expected outcome.
    type Case = (&'static str, Value, Result<Option<i64>, AuthError>);

    /// Rules with `exp` optional, so that each table tests one rule at a time.
    fn rules(issuer: Option<&str>, audience: Option<&str>) -> ClaimRules {
        ClaimRules {
            issuer: issuer.map(str::to_owned),
            audience: audience.map(str::to_owned),
            leeway_secs: 30,
            require_exp: false,
        }
    }

    #[test]
    fn a_token_without_exp_is_refused_when_expiry_is_required() {
        let strict = ClaimRules {
            require_exp: true,
            ..rules(None, None)
        };
        for claims in [
            json!({}),
            json!({"sub": "a", "nbf": NOW - 5}),
            json!({"exp": null}),
        ] {
            assert!(check(&strict, claims.clone()).is_err(), "{claims}");
        }
        assert_eq!(check(&strict, json!({})), Err(AuthError::MissingExpiry));
        assert_eq!(check(&strict, json!({"exp": NOW + 60})), Ok(Some(NOW + 60)));
        assert_eq!(check(&rules(None, None), json!({})), Ok(None));
    }

    fn check(rules: &ClaimRules, claims: Value) -> Result<Option<i64>, AuthError> {
        let Value::Object(claims) = claims else {
            panic!("claims must be an object")
        };
        rules
            .check(&claims, NOW)
            .map(|validity| validity.expires_at)
    }

    #[test]
    fn the_validity_window_accepts_exactly_the_times_check_accepts() {
        let plain = rules(None, None);
        let claim_sets = [
            json!({}),
            json!({"exp": NOW + 5}),
            json!({"nbf": NOW - 5}),
            json!({"nbf": NOW + 40, "exp": NOW + 45}),
            json!({"nbf": NOW - 100, "exp": NOW - 25}),
            json!({"exp": (NOW + 3) as f64 + 0.9}),
        ];
        for claims in claim_sets {
            let Value::Object(map) = &claims else {
                unreachable!()
            };
            // The window of a token checked at some time when it was valid…
            let validity = (NOW - 200..NOW + 200)
                .find_map(|at| plain.check(map, at).ok())
                .expect("valid at some time");
            // …says yes exactly when checking afresh does.
            for now in NOW - 200..NOW + 200 {
                assert_eq!(
                    validity.contains(now),
                    plain.check(map, now).is_ok(),
                    "{claims} at NOW{:+}",
                    now - NOW
                );
            }
        }
    }

    #[test]
    fn time_claims() {
        let plain = rules(None, None);
        let cases: &[Case] = &[
            ("no exp is accepted when not required", json!({}), Ok(None)),
            ("future exp", json!({"exp": NOW + 60}), Ok(Some(NOW + 60))),
            (
                "expired within leeway",
                json!({"exp": NOW - 29}),
                Ok(Some(NOW - 29)),
            ),
            (
                "expired exactly at leeway",
                json!({"exp": NOW - 30}),
                Err(AuthError::Expired),
            ),
            (
                "expired beyond leeway",
                json!({"exp": NOW - 31}),
                Err(AuthError::Expired),
            ),
            (
                "fractional exp",
                json!({"exp": (NOW + 60) as f64 + 0.5}),
                Ok(Some(NOW + 60)),
            ),
            (
                "exp as string",
                json!({"exp": "tomorrow"}),
                Err(AuthError::Malformed),
            ),
            ("exp null", json!({"exp": null}), Err(AuthError::Malformed)),
            ("huge exp", json!({"exp": u64::MAX}), Ok(Some(i64::MAX))),
            ("nbf in the past", json!({"nbf": NOW - 10}), Ok(None)),
            ("nbf within leeway", json!({"nbf": NOW + 30}), Ok(None)),
            (
                "nbf beyond leeway",
                json!({"nbf": NOW + 31}),
                Err(AuthError::NotYetValid),
            ),
            (
                "nbf as string",
                json!({"nbf": "now"}),
                Err(AuthError::Malformed),
            ),
        ];
        for (name, claims, expected) in cases {
            assert_eq!(check(&plain, claims.clone()), *expected, "case: {name}");
        }
    }

    #[test]
    fn issuer_and_audience_claims() {
        let strict = rules(Some("https://idp.example"), Some("toolgate"));
        let iss = "https://idp.example";
        let cases: &[Case] = &[
            (
                "both match",
                json!({"iss": iss, "aud": "toolgate"}),
                Ok(None),
            ),
            (
                "aud array contains",
                json!({"iss": iss, "aud": ["other", "toolgate"]}),
                Ok(None),
            ),
            (
                "aud array lacks",
                json!({"iss": iss, "aud": ["other"]}),
                Err(AuthError::WrongAudience),
            ),
            (
                "aud empty array",
                json!({"iss": iss, "aud": []}),
                Err(AuthError::WrongAudience),
            ),
            (
                "aud other string",
                json!({"iss": iss, "aud": "other"}),
                Err(AuthError::WrongAudience),
            ),
            (
                "aud missing",
                json!({"iss": iss}),
                Err(AuthError::WrongAudience),
            ),
            (
                "aud wrong type",
                json!({"iss": iss, "aud": 7}),
                Err(AuthError::WrongAudience),
            ),
            (
                "iss other",
                json!({"iss": "https://evil.example", "aud": "toolgate"}),
                Err(AuthError::WrongIssuer),
            ),
            (
                "iss missing",
                json!({"aud": "toolgate"}),
                Err(AuthError::WrongIssuer),
            ),
            (
                "iss as array",
                json!({"iss": [iss], "aud": "toolgate"}),
                Err(AuthError::WrongIssuer),
            ),
        ];
        for (name, claims, expected) in cases {
            assert_eq!(check(&strict, claims.clone()), *expected, "case: {name}");
        }
    }

    #[test]
    fn unconfigured_issuer_and_audience_are_not_checked() {
        let lax = rules(None, None);
        assert_eq!(
            check(&lax, json!({"iss": "anyone", "aud": ["anything"]})),
            Ok(None)
        );
    }
}
