//! `[auth]`: `toolhost serve --http` as an OAuth 2.1 resource server
//! (see [`mcp::server::auth`](crate::mcp::server::auth)).

use serde::Deserialize;

/// `[auth]` of the host config: access tokens of one issuer, for this
/// server's canonical URI: JWTs checked against its keys (`jwks_uri`),
/// opaque tokens checked by asking it (`introspection_uri`, RFC 7662), or
/// both (JWTs locally, the rest introspected).
///
/// ```toml
/// [auth]
/// resource = "https://tools.example.com/mcp"   # this server's canonical URI (the audience)
/// issuer = "https://login.example.com"          # the tokens' `iss`
/// jwks_uri = "https://login.example.com/jwks"   # the issuer's keys (https; http to loopback only)
/// scopes = ["tools"]                            # every token needs these (else 403)
/// algorithms = ["ES256", "RS256"]               # default: RS256 PS256 ES256 ES384 EdDSA
/// leeway_secs = 60                              # clock skew allowed on exp/nbf
/// # Opaque tokens, instead of (or beside) jwks_uri:
/// # introspection_uri = "https://login.example.com/introspect"
/// # client_id = "toolhost"                      # this server's client at the issuer
/// # client_secret_env = "TOOLHOST_AUTH_SECRET"  # the environment variable holding its secret
/// # introspection_cache_secs = 60               # how long an answer is kept (0: never)
///
/// [[auth.rules]]                                # who sees and calls which tools (first match)
/// name = "agents"
/// client_id = "agent-1"                         # or subject, scope, or claim = { groups = "x" }; none: anyone
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
    /// Where the issuer publishes its keys (JWKS), for JWT access tokens.
    #[serde(default)]
    pub jwks_uri: Option<String>,
    /// The issuer's token introspection endpoint (RFC 7662), for opaque
    /// access tokens (every token when there is no `jwks_uri`).
    #[serde(default)]
    pub introspection_uri: Option<String>,
    /// This server's client id at the issuer, for introspection.
    #[serde(default)]
    pub client_id: Option<String>,
    /// The environment variable holding this server's client secret, for
    /// introspection (never the secret itself in the file).
    #[serde(default)]
    pub client_secret_env: Option<String>,
    /// Seconds an introspection answer is kept (default 60; 0: every
    /// request asks).
    #[serde(default)]
    pub introspection_cache_secs: Option<u64>,
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
    /// A claim of the token and the string it must be or hold, as a table
    /// of one entry: `claim = { groups = "admins" }`.
    pub claim: Option<std::collections::BTreeMap<String, String>>,
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

/// A config error about `[auth]`, saying `message`.
#[cfg(feature = "server")]
fn value(message: String) -> super::ConfigError {
    super::ConfigError::Value {
        path: None,
        message,
    }
}

#[cfg(feature = "server")]
impl AuthConfig {
    /// The resource server this section describes.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`](super::ConfigError::Value) for an algorithm
    /// the verifier does not accept (`none`, HMAC, unknown), a JWKS URL or
    /// introspection endpoint that is not https, neither of them, or
    /// introspection without its client id or secret.
    pub fn resource_server(
        &self,
    ) -> Result<crate::mcp::server::auth::ResourceServer, super::ConfigError> {
        use crate::mcp::server::auth::{JwtOrOpaque, ResourceServer};
        let jwt = self.jwt_verifier()?;
        let opaque = self.introspection_verifier()?;
        let server = match (jwt, opaque) {
            (Some(jwt), Some(opaque)) => {
                ResourceServer::new(&self.resource, JwtOrOpaque::new(jwt, opaque))
            }
            (Some(jwt), None) => ResourceServer::new(&self.resource, jwt),
            (None, Some(opaque)) => ResourceServer::new(&self.resource, opaque),
            (None, None) => {
                return Err(value(
                    "[auth]: give jwks_uri (JWT access tokens), introspection_uri (opaque ones, \
                     RFC 7662), or both"
                        .to_owned(),
                ));
            }
        };
        let mut server = server.authorization_server(&self.issuer);
        for scope in &self.scopes {
            server = server.scope(scope);
        }
        Ok(server)
    }

    /// The introspection verifier, with `introspection_uri`.
    fn introspection_verifier(
        &self,
    ) -> Result<Option<crate::mcp::server::auth::IntrospectionVerifier>, super::ConfigError> {
        let Some(uri) = &self.introspection_uri else {
            if self.client_id.is_some() || self.client_secret_env.is_some() {
                return Err(value(
                    "[auth]: client_id and client_secret_env are for introspection; add \
                     introspection_uri, or remove them"
                        .to_owned(),
                ));
            }
            return Ok(None);
        };
        let (Some(client_id), Some(secret_env)) = (&self.client_id, &self.client_secret_env) else {
            return Err(value(
                "[auth] introspection_uri needs client_id and client_secret_env: this server's \
                 client at the issuer, and the environment variable holding its secret"
                    .to_owned(),
            ));
        };
        let secret = std::env::var(secret_env)
            .ok()
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| {
                value(format!(
                    "[auth] client_secret_env: the environment variable {secret_env} is not set \
                     (or blank); export this server's client secret in it"
                ))
            })?;
        let verifier = crate::mcp::server::auth::IntrospectionVerifier::new(
            uri,
            client_id,
            &secret,
            &self.resource,
        )
        .map_err(|e| value(format!("[auth] introspection_uri: {e}")))?
        .issuer(&self.issuer)
        .leeway(std::time::Duration::from_secs(self.leeway_secs))
        .keep_answers_for(std::time::Duration::from_secs(
            self.introspection_cache_secs.unwrap_or(60),
        ));
        Ok(Some(verifier))
    }

    /// The JWT verifier, with `jwks_uri`.
    fn jwt_verifier(
        &self,
    ) -> Result<Option<crate::mcp::server::auth::JwtVerifier>, super::ConfigError> {
        use crate::mcp::server::auth::{Algorithm, JwtVerifier};
        let Some(jwks_uri) = &self.jwks_uri else {
            if !self.algorithms.is_empty() {
                return Err(value(
                    "[auth] algorithms are for JWTs; add jwks_uri, or remove them".to_owned(),
                ));
            }
            return Ok(None);
        };
        let mut verifier = JwtVerifier::new(&self.issuer, &self.resource, jwks_uri)
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
        Ok(Some(verifier))
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
        let mut policy = Policy::new();
        for rule in &self.rules {
            let claim = match &rule.claim {
                None => None,
                Some(table) if table.len() == 1 => table.iter().next(),
                Some(_) => {
                    return Err(value(format!(
                        "[[auth.rules]] {:?}: claim takes one claim and its value, like \
                         claim = {{ groups = \"admins\" }}",
                        rule.name
                    )));
                }
            };
            let who = match (&rule.subject, &rule.client_id, &rule.scope, claim) {
                (None, None, None, None) => Who::Anyone,
                (Some(s), None, None, None) => Who::Subject(s.clone()),
                (None, Some(c), None, None) => Who::ClientId(c.clone()),
                (None, None, Some(s), None) => Who::Scope(s.clone()),
                (None, None, None, Some((name, claimed))) => Who::Claim {
                    name: name.clone(),
                    value: claimed.clone(),
                },
                _ => {
                    return Err(value(format!(
                        "[[auth.rules]] {:?}: give at most one of subject, client_id, scope, \
                         claim (a principal matches a rule by one of them)",
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
    fn introspection_needs_its_client_and_a_secret_from_the_environment() {
        let parse = |extra: &str| -> AuthConfig {
            toml::from_str(&format!(
                "resource = \"https://t.example/mcp\"\nissuer = \"https://login.example\"\n{extra}"
            ))
            .unwrap()
        };
        let says = |config: AuthConfig| config.resource_server().unwrap_err().to_string();
        assert!(says(parse("")).contains("give jwks_uri"));
        let uri = "introspection_uri = \"https://login.example/introspect\"";
        assert!(says(parse(uri)).contains("needs client_id and client_secret_env"));
        let unset = format!(
            "{uri}\nclient_id = \"rs\"\nclient_secret_env = \"TOOLHOST_TEST_SURELY_UNSET_SECRET\""
        );
        let err = says(parse(&unset));
        assert!(
            err.contains("TOOLHOST_TEST_SURELY_UNSET_SECRET is not set"),
            "{err}"
        );
        // A variable every test process has stands in for the secret.
        let set = format!("{uri}\nclient_id = \"rs\"\nclient_secret_env = \"PATH\"");
        assert!(parse(&set).resource_server().is_ok());
        let both = format!("{set}\njwks_uri = \"https://login.example/jwks\"");
        assert!(parse(&both).resource_server().is_ok());
        let plain = "introspection_uri = \"http://login.example/i\"\nclient_id = \"rs\"\n\
                     client_secret_env = \"PATH\"";
        assert!(says(parse(plain)).contains("not https"));
        assert!(
            says(parse(
                "jwks_uri = \"https://l.example/jwks\"\nclient_id = \"rs\""
            ))
            .contains("are for introspection")
        );
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
        let rule = |claim: &str| -> AuthConfig {
            toml::from_str(&format!(
                "resource = \"https://t.example/mcp\"\nissuer = \"https://l.example\"\n\
                 [[rules]]\nname = \"c\"\ntools = [\"*\"]\n{claim}"
            ))
            .unwrap()
        };
        let policy = rule("claim = { groups = \"admins\" }")
            .policy()
            .unwrap()
            .unwrap();
        let mut claims = serde_json::Map::new();
        claims.insert("groups".into(), serde_json::json!(["admins"]));
        let admin = crate::mcp::server::auth::Principal::new("a").with_claims(claims);
        assert!(policy.visible(&admin, "calc"));
        assert!(!policy.visible(&crate::mcp::server::auth::Principal::new("b"), "calc"));
        for bad in [
            "claim = { groups = \"a\", roles = \"b\" }",
            "claim = {}",
            "claim = { groups = \"a\" }\nscope = \"tools\"",
        ] {
            assert!(rule(bad).policy().is_err(), "{bad}");
        }
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
