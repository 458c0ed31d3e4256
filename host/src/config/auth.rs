//! `[auth]`: `toolhost serve --http` as an OAuth 2.1 resource server
//! (see [`mcp::server::auth`](crate::mcp::server::auth)).

use serde::Deserialize;

/// `[auth]` of the host config: JWT access tokens of one issuer, for this
/// server's canonical URI.
///
/// ```toml
/// [auth]
/// resource = "https://tools.example.com/mcp"   # this server's canonical URI (the audience)
/// issuer = "https://login.example.com"          # the tokens' `iss`
/// jwks_uri = "https://login.example.com/jwks"   # the issuer's keys (https; http to loopback only)
/// scopes = ["tools"]                            # every token needs these (else 403)
/// algorithms = ["ES256", "RS256"]               # default: RS256 PS256 ES256 ES384 EdDSA
/// leeway_secs = 60                              # clock skew allowed on exp/nbf
///
/// [[auth.rules]]                                # who sees and calls which tools (first match)
/// name = "agents"
/// client_id = "agent-1"                         # or subject = "..." or scope = "..."; none: anyone
/// tools = ["calc_*", "weather"]
/// per_minute = 60                               # optional rate, per principal per tool
/// burst = 10
/// max_concurrent = 4                            # optional: calls running at once, per principal
/// fuel_per_window = 50_000_000_000              # optional quota per principal, all tools:
/// wall_ms_per_window = 600_000                  #   fuel and wall time (ms) its calls may spend
/// window_secs = 3600                            #   in a window (default 3600)
/// ```
///
/// With no rules, every accepted principal may see and call every tool;
/// with rules, a principal no rule covers sees none.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// This server's canonical URI: the audience tokens must name, and
    /// what the Protected Resource Metadata says.
    pub resource: String,
    /// The authorization server (the tokens' `iss`).
    pub issuer: String,
    /// Where the issuer publishes its keys (JWKS).
    pub jwks_uri: String,
    /// Scopes every token needs.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The signing algorithms accepted (JOSE names); empty: all the
    /// verifier knows, all asymmetric.
    #[serde(default)]
    pub algorithms: Vec<String>,
    /// Seconds of clock skew allowed on `exp` and `nbf`.
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
    /// Who sees and calls which tools (`[[auth.rules]]`), first match
    /// first.
    #[serde(default)]
    pub rules: Vec<AuthRule>,
}

/// One `[[auth.rules]]`: the principals it covers (at most one of
/// `subject`, `client_id`, `scope`; none: anyone), the tools they may see
/// and call (patterns, `*` for any run of characters), and an optional
/// rate per principal per tool.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthRule {
    /// Named in refusals and the log.
    pub name: String,
    /// The token's `sub`.
    pub subject: Option<String>,
    /// The token's `client_id` (or `azp`).
    pub client_id: Option<String>,
    /// A scope the token grants.
    pub scope: Option<String>,
    /// Tool name patterns.
    pub tools: Vec<String>,
    /// Calls a minute per principal per tool (with `burst`).
    pub per_minute: Option<u32>,
    /// Calls at once before the rate applies (default: `per_minute`, at
    /// least 1).
    pub burst: Option<u32>,
    /// Calls a principal may have running at once.
    pub max_concurrent: Option<u32>,
    /// Fuel a principal's calls may spend in a window (all tools).
    pub fuel_per_window: Option<u64>,
    /// Milliseconds of wall time a principal's calls may spend in a window.
    pub wall_ms_per_window: Option<u64>,
    /// The quota's window, in seconds (default 3600).
    pub window_secs: Option<u64>,
}

fn default_leeway() -> u64 {
    60
}

#[cfg(feature = "server")]
impl AuthConfig {
    /// The resource server this section describes.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`](super::ConfigError::Value) for an algorithm
    /// the verifier does not accept (`none`, HMAC, unknown) or a JWKS URL
    /// that is not https.
    pub fn resource_server(
        &self,
    ) -> Result<crate::mcp::server::auth::ResourceServer, super::ConfigError> {
        use crate::mcp::server::auth::{Algorithm, JwtVerifier, ResourceServer};
        let value = |message: String| super::ConfigError::Value {
            path: None,
            message,
        };
        let mut verifier = JwtVerifier::new(&self.issuer, &self.resource, &self.jwks_uri)
            .map_err(|e| value(format!("[auth] jwks_uri: {e}")))?
            .leeway(std::time::Duration::from_secs(self.leeway_secs));
        if !self.algorithms.is_empty() {
            let algorithms = self
                .algorithms
                .iter()
                .map(|name| {
                    Algorithm::from_name(name).ok_or_else(|| {
                        value(format!(
                            "[auth] algorithms: {name:?} is not accepted; use asymmetric ones \
                             (RS256, PS256, ES256, ES384, EdDSA), never none or HMAC"
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            verifier = verifier.algorithms(algorithms);
        }
        let mut server =
            ResourceServer::new(&self.resource, verifier).authorization_server(&self.issuer);
        for scope in &self.scopes {
            server = server.scope(scope);
        }
        Ok(server)
    }

    /// The policy of the rules, if there are any.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`](super::ConfigError::Value) for a rule with
    /// more than one of `subject`, `client_id`, `scope`, or a bad pattern.
    pub fn policy(&self) -> Result<Option<crate::mcp::server::auth::Policy>, super::ConfigError> {
        use crate::mcp::server::auth::{Policy, Quota, Rate, Rule, Who};
        if self.rules.is_empty() {
            return Ok(None);
        }
        let value = |message: String| super::ConfigError::Value {
            path: None,
            message,
        };
        let mut policy = Policy::new();
        for rule in &self.rules {
            let who = match (&rule.subject, &rule.client_id, &rule.scope) {
                (None, None, None) => Who::Anyone,
                (Some(s), None, None) => Who::Subject(s.clone()),
                (None, Some(c), None) => Who::ClientId(c.clone()),
                (None, None, Some(s)) => Who::Scope(s.clone()),
                _ => {
                    return Err(value(format!(
                        "[[auth.rules]] {:?}: give at most one of subject, client_id, scope \
                         (a principal matches a rule by one of them)",
                        rule.name
                    )));
                }
            };
            let tools = rule
                .tools
                .iter()
                .map(|p| {
                    crate::approval::ToolPattern::new(p.as_str()).map_err(|e| {
                        value(format!("[[auth.rules]] {:?}: tools {p:?}: {e}", rule.name))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let mut built = Rule::new(&rule.name, who, tools);
            if let Some(per_minute) = rule.per_minute {
                built = built.rate(Rate {
                    per_minute,
                    burst: rule.burst.unwrap_or(per_minute).max(1),
                });
            }
            if let Some(max) = rule.max_concurrent {
                built = built.max_concurrent(max);
            }
            match (
                rule.fuel_per_window,
                rule.wall_ms_per_window,
                rule.window_secs,
            ) {
                (None, None, None) => {}
                (None, None, Some(_)) => {
                    return Err(value(format!(
                        "[[auth.rules]] {:?}: window_secs without a quota; add fuel_per_window \
                         or wall_ms_per_window, or remove it",
                        rule.name
                    )));
                }
                (_, _, Some(0)) => {
                    return Err(value(format!(
                        "[[auth.rules]] {:?}: window_secs must be more than 0",
                        rule.name
                    )));
                }
                (fuel, wall_ms, window) => {
                    built = built.quota(Quota {
                        window: std::time::Duration::from_secs(window.unwrap_or(3600)),
                        fuel,
                        wall_time: wall_ms.map(std::time::Duration::from_millis),
                    });
                }
            }
            policy = policy.rule(built);
        }
        Ok(Some(policy))
    }
}

#[cfg(all(test, feature = "server"))]
mod tests {
    use super::*;

    #[test]
    fn hmac_and_none_are_refused_by_name() {
        let mut config: AuthConfig = toml::from_str(
            r#"resource = "https://t.example/mcp"
               issuer = "https://login.example"
               jwks_uri = "https://login.example/jwks""#,
        )
        .unwrap();
        assert_eq!(config.leeway_secs, 60);
        assert!(config.resource_server().is_ok());
        assert!(config.policy().unwrap().is_none());
        for bad in ["none", "HS256"] {
            config.algorithms = vec![bad.into()];
            let err = config.resource_server().unwrap_err().to_string();
            assert!(err.contains("never none or HMAC"), "{err}");
        }
    }

    #[test]
    fn a_rule_matches_by_one_claim_only() {
        let config: AuthConfig = toml::from_str(
            r#"resource = "https://t.example/mcp"
               issuer = "https://login.example"
               jwks_uri = "https://login.example/jwks"
               [[rules]]
               name = "both"
               subject = "alice"
               client_id = "app"
               tools = ["*"]"#,
        )
        .unwrap();
        let err = config.policy().unwrap_err().to_string();
        assert!(err.contains("at most one of"), "{err}");
    }

    #[test]
    fn a_rule_s_quota_is_read_and_checked() {
        let parse = |rule: &str| -> AuthConfig {
            toml::from_str(&format!(
                r#"resource = "https://t.example/mcp"
                   issuer = "https://login.example"
                   jwks_uri = "https://login.example/jwks"
                   [[rules]]
                   name = "metered"
                   tools = ["*"]
                   {rule}"#
            ))
            .unwrap()
        };
        let policy = std::sync::Arc::new(
            parse("fuel_per_window = 100\nwindow_secs = 60")
                .policy()
                .unwrap()
                .unwrap(),
        );
        let who = crate::mcp::server::auth::Principal::new("alice");
        policy
            .admit(&who, "calc")
            .unwrap()
            .charge(100, std::time::Duration::ZERO);
        let refused = policy.admit(&who, "calc").unwrap_err().to_string();
        assert!(refused.contains("100 of fuel per 60s"), "{refused}");
        for (rule, says) in [
            ("window_secs = 60", "without a quota"),
            ("wall_ms_per_window = 5\nwindow_secs = 0", "more than 0"),
        ] {
            let err = parse(rule).policy().unwrap_err().to_string();
            assert!(err.contains(says), "{rule}: {err}");
        }
    }
}
