//! The policy's rules, rates, caps and quotas, on a clock the tests set.

use super::*;
use crate::mcp::server::auth::{RATE_LIMITED, refusal};

fn pattern(p: &str) -> ToolPattern {
    ToolPattern::new(p).unwrap()
}

fn policy() -> Arc<Policy> {
    let policy = Policy::new()
        .rule(Rule::new(
            "admins",
            Who::Scope("admin".into()),
            [pattern("*")],
        ))
        .rule(
            Rule::new("agents", Who::ClientId("agent".into()), [pattern("calc_*")]).rate(Rate {
                per_minute: 60,
                burst: 2,
            }),
        );
    Arc::new(policy)
}

#[test]
fn the_first_matching_rule_decides_what_is_seen() {
    let p = policy();
    let admin = Principal::new("root").with_scopes(["admin"]);
    let agent = Principal::new("bot").with_client_id("agent");
    let stranger = Principal::new("eve");
    assert!(p.visible(&admin, "fs_delete"));
    assert!(p.visible(&agent, "calc_add") && !p.visible(&agent, "fs_delete"));
    assert!(!p.visible(&stranger, "calc_add"));
    let denied = p.admit(&agent, "fs_delete").unwrap_err();
    assert_eq!(denied.rule(), Some("agents"));
    assert!(denied.to_string().contains("operator"), "{denied}");
    assert!(matches!(
        p.admit(&stranger, "calc_add"),
        Err(Denied::NoRule { .. })
    ));
}

#[test]
fn a_principal_over_its_rate_is_told_when_to_retry_while_others_are_served() {
    let p = policy();
    let bot = Principal::new("bot").with_client_id("agent");
    let other = Principal::new("bot-2").with_client_id("agent");
    let t0 = Instant::now();
    assert!(p.admit_at(&bot, "calc_add", t0).is_ok());
    assert!(p.admit_at(&bot, "calc_add", t0).is_ok());
    let Err(Denied::RateLimited { retry_after, .. }) = p.admit_at(&bot, "calc_add", t0) else {
        panic!("the third call in a burst of 2 is refused");
    };
    assert_eq!(retry_after.as_secs(), 1);
    // Another principal, and another tool, have buckets of their own.
    assert!(p.admit_at(&other, "calc_add", t0).is_ok());
    assert!(p.admit_at(&bot, "calc_mul", t0).is_ok());
    // One token a second comes back.
    assert!(
        p.admit_at(&bot, "calc_add", t0 + Duration::from_secs(1))
            .is_ok()
    );
}

#[test]
fn a_principal_at_its_cap_waits_for_a_call_to_finish_while_others_run() {
    let p = Arc::new(
        Policy::new()
            .rule(Rule::new("one-at-a-time", Who::Anyone, [pattern("*")]).max_concurrent(1)),
    );
    let alice = Principal::new("alice");
    let bob = Principal::new("bob");
    let first = p.admit(&alice, "slow").unwrap();
    let Err(busy) = p.admit(&alice, "other") else {
        panic!("a second call at once is refused");
    };
    assert!(matches!(busy, Denied::Busy { max: 1, .. }), "{busy}");
    let _bobs = p.admit(&bob, "slow").unwrap();
    drop(first);
    assert!(p.admit(&alice, "other").is_ok());
}

#[test]
fn a_principal_past_its_fuel_or_time_quota_waits_for_the_window_while_others_are_served() {
    let hour = Duration::from_secs(3600);
    let p = Arc::new(
        Policy::new()
            .rule(
                Rule::new("metered", Who::ClientId("metered".into()), [pattern("*")]).quota(
                    Quota {
                        window: hour,
                        fuel: Some(1_000),
                        wall_time: Some(Duration::from_secs(10)),
                    },
                ),
            )
            .rule(Rule::new("free", Who::Anyone, [pattern("*")])),
    );
    let alice = Principal::new("alice").with_client_id("metered");
    let carol = Principal::new("carol").with_client_id("metered");
    let bob = Principal::new("bob");
    let t0 = Instant::now();
    // Under the line, calls are admitted; the one that crosses it ran.
    for _ in 0..2 {
        let permit = p.admit_at(&alice, "calc", t0).unwrap();
        permit.charge_at(600, Duration::from_millis(5), t0);
    }
    let later = t0 + Duration::from_secs(600);
    let Err(denied) = p.admit_at(&alice, "calc", later) else {
        panic!("past the fuel quota, the next call is refused");
    };
    let Denied::QuotaSpent {
        spent, retry_after, ..
    } = denied
    else {
        panic!("{denied:?}")
    };
    assert_eq!(
        spent,
        Spent::Fuel {
            limit: 1_000,
            used: 1_200
        }
    );
    assert_eq!(retry_after, hour - Duration::from_secs(600));
    assert!(denied.to_string().contains("retry after"), "{denied}");
    let refusal = refusal(&denied, &alice);
    assert_eq!(refusal.code.0, RATE_LIMITED);
    let data = refusal.data.unwrap();
    assert_eq!(data["retryAfterSeconds"], serde_json::json!(3000.0));
    assert_eq!(data["quota"], "fuel");
    // Another principal of the same rule, and one of a rule without a
    // quota, are served.
    p.admit_at(&carol, "calc", later)
        .unwrap()
        .charge_at(10, Duration::from_secs(11), later);
    assert!(p.admit_at(&bob, "calc", later).is_ok());
    // Wall time counts too.
    let Err(Denied::QuotaSpent { spent, .. }) = p.admit_at(&carol, "calc", later) else {
        panic!("past the wall-time quota, the next call is refused");
    };
    assert_eq!(spent.what(), "wall time");
    // A new window, a new allowance.
    assert!(p.admit_at(&alice, "calc", t0 + hour).is_ok());
}

#[test]
fn a_claim_rule_matches_a_claim_that_is_or_holds_its_value() {
    let p = Policy::new().rule(Rule::new(
        "admins",
        Who::Claim {
            name: "groups".into(),
            value: "admins".into(),
        },
        [pattern("*")],
    ));
    let claims = |value: serde_json::Value| {
        let mut map = serde_json::Map::new();
        map.insert("groups".into(), value);
        Principal::new("someone").with_claims(map)
    };
    for (value, matches) in [
        (serde_json::json!("admins"), true),
        (serde_json::json!(["users", "admins"]), true),
        (serde_json::json!(["users"]), false),
        (serde_json::json!("admins-not"), false),
        (serde_json::json!({"admins": true}), false),
    ] {
        assert_eq!(
            p.visible(&claims(value.clone()), "calc"),
            matches,
            "{value}"
        );
    }
    assert!(!p.visible(&Principal::new("no-claims"), "calc"));
}

#[test]
fn a_call_refused_by_one_limit_counts_against_none() {
    let p = Arc::new(
        Policy::new().rule(
            Rule::new("tight", Who::Anyone, [pattern("calc_*")])
                .max_concurrent(1)
                .rate(Rate {
                    per_minute: 60,
                    burst: 1,
                }),
        ),
    );
    let alice = Principal::new("alice");
    let t0 = Instant::now();
    drop(p.admit_at(&alice, "calc_add", t0).unwrap());
    // Out of tokens: refused, and not left running.
    let Err(Denied::RateLimited { .. }) = p.admit_at(&alice, "calc_add", t0) else {
        panic!("the bucket is empty");
    };
    // A tool outside the rule takes no token and holds no slot either.
    let Err(Denied::Tool { .. }) = p.admit_at(&alice, "shell", t0) else {
        panic!("`shell` is not the rule's");
    };
    let later = t0 + Duration::from_secs(1);
    let held = p.admit_at(&alice, "calc_add", later).unwrap();
    let Err(Denied::Busy { max: 1, .. }) = p.admit_at(&alice, "calc_mul", later) else {
        panic!("one call at once");
    };
    drop(held);
    assert!(p.admit_at(&alice, "calc_mul", later).is_ok());
}

#[test]
fn idle_principals_are_forgotten_past_the_bound_and_busy_ones_kept() {
    let p = Arc::new(
        Policy::new().rule(Rule::new("capped", Who::Anyone, [pattern("*")]).max_concurrent(1)),
    );
    let t0 = Instant::now();
    let busy = p.admit_at(&Principal::new("busy"), "calc", t0).unwrap();
    for i in 0..MAX_LEDGERS {
        drop(
            p.admit_at(&Principal::new(format!("p{i}")), "calc", t0)
                .unwrap(),
        );
    }
    let kept = p.ledgers[0].lock().unwrap().len();
    assert!(kept < MAX_LEDGERS, "idle ledgers dropped: {kept} kept");
    // The one with a call running keeps counting it.
    let Err(Denied::Busy { .. }) = p.admit_at(&Principal::new("busy"), "calc", t0) else {
        panic!("`busy` still has its call running");
    };
    drop(busy);
}
