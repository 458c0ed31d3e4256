//! Tool search over 500 tools: how many tokens deferral saves per model
//! request, and how often the index finds the right tool.
//!
//! The 500 tools are the bundled plugins' (loaded from `target/plugins`)
//! plus generated REST-like (`github_create_issue`) and MCP-like
//! (`notion-createPage`) tools: 40 services with 4 resources and 3
//! operations each, every tool with a one-sentence description and 1 to 3
//! described arguments. 50 scripted tasks, each a user's request in their
//! own words with the one tool that does it, are searched with
//! [`ToolSet::index`](toolhost::tools::ToolSet::index).
//!
//! Tokens are counted as JSON bytes / 4 of the tool definitions sent with a
//! request (`{"name", "description", "input_schema"}` each): the full list,
//! against `tool_search` + an always-on set + the top 5 found tools.
//! Floors: deferred ≤ 20% of the full list, right tool in the top 5 for ≥
//! 90% of the tasks.
//!
//! `cargo test --workspace --bench tool_search -- --bench` prints the
//! table; without `--bench` it makes the same (fast) run.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::tools::search::{ToolIndex, tool_search_spec};
use toolhost::tools::{NativeTool, ToolSpec};
use toolhost::{HostConfig, Toolbox};

/// How many tools the bench indexes.
const TOOLS: usize = 500;
/// Found tools whose definitions go with a deferred request.
const TOP: usize = 5;
/// Tools sent with every request, searched or not.
const ALWAYS_ON: &[&str] = &["calc_eval", "scratchpad_get", "scratchpad_put"];

/// `service|Display name|mcp or rest|resource:op,op,op;...` — 4 resources
/// with 3 operations each.
const SERVICES: &[&str] = &[
    "github|GitHub|rest|issue:create,close,comment;pull_request:create,merge,list;repository:get,list,archive;release:create,list,delete",
    "gitlab|GitLab|rest|merge_request:create,merge,list;pipeline:get,list,cancel;project:get,list,archive;issue:create,close,assign",
    "jira|Jira|rest|ticket:create,transition,assign;sprint:get,list,create;board:get,list,archive;comment:create,list,delete",
    "linear|Linear|mcp|issue:create,update,assign;project:get,list,archive;cycle:get,list,create;label:create,list,delete",
    "confluence|Confluence|rest|page:create,update,search;space:get,list,archive;attachment:upload,download,delete;comment:create,list,delete",
    "notion|Notion|mcp|page:create,update,search;database:query,get,create;block:get,update,delete;comment:create,list,get",
    "slack|Slack|mcp|message:post,search,delete;channel:create,list,archive;reminder:create,list,delete;user:get,list,invite",
    "discord|Discord|rest|message:post,delete,search;channel:create,list,delete;role:create,assign,delete;member:get,list,invite",
    "teams|Microsoft Teams|mcp|message:post,list,delete;meeting:schedule,cancel,get;channel:create,list,archive;team:get,list,create",
    "zoom|Zoom|rest|meeting:schedule,cancel,list;recording:get,list,download;webinar:schedule,cancel,list;user:get,list,invite",
    "gmail|Gmail|mcp|email:send,search,delete;draft:create,update,send;label:create,list,delete;thread:get,list,archive",
    "outlook|Outlook|rest|email:send,search,delete;event:schedule,cancel,update;contact:create,get,search;folder:create,list,delete",
    "gcal|Google Calendar|mcp|event:schedule,cancel,update;calendar:get,list,create;reminder:create,list,delete;availability:query,get,list",
    "gdrive|Google Drive|rest|file:upload,download,delete;folder:create,list,delete;permission:create,list,delete;document:search,get,create",
    "dropbox|Dropbox|rest|file:upload,download,delete;folder:create,list,delete;shared_link:create,list,delete;file_revision:list,get,restore",
    "s3|Amazon S3|rest|object:upload,download,delete;bucket:create,list,delete;bucket_policy:get,update,delete;presigned_url:create,get,list",
    "stripe|Stripe|rest|charge:create,refund,get;customer:create,update,search;invoice:create,send,cancel;subscription:create,cancel,update",
    "paypal|PayPal|rest|payment:create,refund,get;payout:create,get,cancel;dispute:get,list,resolve;invoice:create,send,cancel",
    "shopify|Shopify|mcp|product:create,update,search;order:get,list,cancel;inventory_level:get,update,list;discount_code:create,list,delete",
    "quickbooks|QuickBooks|rest|invoice:create,send,get;expense:create,list,delete;vendor:create,get,list;bill:create,get,list",
    "xero|Xero|rest|invoice:create,get,list;bank_transaction:list,get,create;contact:create,update,search;payroll_run:get,list,create",
    "salesforce|Salesforce|rest|lead:create,update,search;opportunity:create,update,get;account:get,search,update;report:query,get,list",
    "hubspot|HubSpot|mcp|contact:create,update,search;deal:create,update,get;company:get,search,create;email_campaign:create,send,get",
    "zendesk|Zendesk|rest|ticket:create,update,resolve;macro:get,list,create;user:get,search,create;satisfaction_rating:get,list,create",
    "intercom|Intercom|mcp|conversation:get,list,close;article:create,update,search;contact:create,search,update;note:create,list,delete",
    "twilio|Twilio|rest|sms:send,get,list;call:create,get,cancel;phone_number:list,get,delete;verification:create,get,cancel",
    "sendgrid|SendGrid|rest|email:send,get,list;template:create,update,get;contact_list:create,list,delete;suppression:create,list,delete",
    "mailchimp|Mailchimp|mcp|campaign:create,send,get;audience:get,list,create;subscriber:create,update,delete;automation:get,list,archive",
    "pagerduty|PagerDuty|rest|incident:create,acknowledge,resolve;schedule:get,list,update;service:get,list,create;escalation_policy:get,list,update",
    "datadog|Datadog|mcp|metric:query,get,list;monitor:create,update,delete;dashboard:get,list,create;log:search,get,archive",
    "sentry|Sentry|rest|issue:get,resolve,assign;release:create,get,list;project:get,list,create;event:get,list,search",
    "kubernetes|Kubernetes|mcp|deployment:scale,restart,get;pod:list,get,delete;service:get,list,create;config_map:get,update,create",
    "docker|Docker|rest|container:create,restart,delete;image:list,get,delete;volume:create,list,delete;network:create,list,delete",
    "ec2|Amazon EC2|rest|instance:create,restart,delete;security_group:create,update,delete;snapshot:create,list,delete;key_pair:create,list,delete",
    "cloudflare|Cloudflare|mcp|dns_record:create,update,delete;zone:get,list,create;cache:delete,get,update;firewall_rule:create,list,delete",
    "vercel|Vercel|rest|deployment:create,get,cancel;domain:create,list,delete;environment_variable:create,update,delete;project:get,list,create",
    "airtable|Airtable|mcp|record:create,update,search;table:get,list,create;base:get,list,create;view:get,list,create",
    "asana|Asana|rest|task:create,update,assign;project:get,list,archive;section:create,list,delete;comment:create,list,delete",
    "trello|Trello|mcp|card:create,update,archive;board:get,list,create;list:create,get,archive;checklist:create,update,delete",
    "spotify|Spotify|rest|track:play,search,get;playlist:create,update,get;album:get,search,list;queue:update,get,delete",
];

/// Tasks written after the index's synonym table, against the catalogue
/// only, never run before the table was fixed: the fair top-5 figure (the
/// synonym table took three words from [`TASKS`] it had missed).
const HELD_OUT: &[(&str, &str)] = &[
    (
        "cancel the Stripe subscription for customer cus_881",
        "stripe_cancel_subscription",
    ),
    (
        "which pods are running in the payments namespace?",
        "kubernetes-listPod",
    ),
    (
        "restart the web container, it is stuck",
        "docker_restart_container",
    ),
    (
        "roll the api deployment out to 6 replicas",
        "kubernetes-scaleDeployment",
    ),
    (
        "take a disk snapshot of the database server on EC2",
        "ec2_create_snapshot",
    ),
    (
        "point the www DNS record at 203.0.113.9 in Cloudflare",
        "cloudflare-updateDnsRecord",
    ),
    (
        "acknowledge the PagerDuty alert that just fired",
        "pagerduty_acknowledge_incident",
    ),
    (
        "show me the Datadog dashboards we have",
        "datadog-listDashboard",
    ),
    (
        "text the on-call engineer's phone that the site is down",
        "twilio_send_sms",
    ),
    (
        "pay back the customer for order 5531 through PayPal",
        "paypal_refund_payment",
    ),
    (
        "archive the old Trello card for the launch",
        "trello-archiveCard",
    ),
    (
        "look up the album Abbey Road on Spotify",
        "spotify_search_album",
    ),
    (
        "upload the quarterly report to Google Drive",
        "gdrive_upload_file",
    ),
    (
        "make a temporary download link for the backup in S3",
        "s3_create_presigned_url",
    ),
    (
        "log a 45 dollar taxi ride as an expense in QuickBooks",
        "quickbooks_create_expense",
    ),
    (
        "close the Intercom chat with the customer, it is sorted out",
        "intercom-closeConversation",
    ),
    (
        "mark Zendesk ticket 7781 as solved",
        "zendesk_resolve_ticket",
    ),
    (
        "invite the new hire to our Discord server",
        "discord_invite_member",
    ),
    (
        "archive yesterday's Gmail thread about invoices",
        "gmail-archiveThread",
    ),
    (
        "what time slots are free on my Google Calendar on Thursday?",
        "gcal-queryAvailability",
    ),
];

/// A second held-out set, written on 2026-11-28 against the catalogue
/// before that day's ranking changes (naming-style fairness, the named
/// service) and never used to pick them: after those changes,
/// [`HELD_OUT`]'s misses had been looked at, these had not.
const HELD_OUT_2: &[(&str, &str)] = &[
    (
        "publish a new GitHub release for version 2.4.0",
        "github_create_release",
    ),
    (
        "stop the GitLab pipeline that is running on main",
        "gitlab_cancel_pipeline",
    ),
    (
        "start a new two-week sprint on the Jira board",
        "jira_create_sprint",
    ),
    (
        "attach the architecture diagram PDF to our Confluence page",
        "confluence_upload_attachment",
    ),
    (
        "query the Notion tasks database for items due this week",
        "notion-queryDatabase",
    ),
    (
        "delete the Slack message I posted by mistake",
        "slack-deleteMessage",
    ),
    (
        "give Priya the moderator role on Discord",
        "discord_assign_role",
    ),
    ("call off tomorrow's Zoom webinar", "zoom_cancel_webinar"),
    (
        "save a draft reply in Gmail without sending it",
        "gmail-createDraft",
    ),
    (
        "add Jane Doe as a new contact in Outlook",
        "outlook_create_contact",
    ),
    (
        "who can open the Drive folder? show its sharing permissions",
        "gdrive_list_permission",
    ),
    (
        "remove the empty logs-old bucket from S3",
        "s3_delete_bucket",
    ),
    ("void invoice INV-220 in Stripe", "stripe_cancel_invoice"),
    ("show this week's Shopify orders", "shopify-listOrder"),
    (
        "run this month's payroll in Xero",
        "xero_create_payroll_run",
    ),
    (
        "write a help article about password resets in Intercom",
        "intercom-createArticle",
    ),
    (
        "search Datadog logs for 502 errors from the gateway",
        "datadog-searchLog",
    ),
    (
        "open port 443 in the EC2 security group for the web servers",
        "ec2_update_security_group",
    ),
    ("hand the Asana task over to Tom", "asana_assign_task"),
    ("add this song to my Spotify queue", "spotify_update_queue"),
];

/// `(user's request, the tool that does it)`.
const TASKS: &[(&str, &str)] = &[
    ("what is 17.5% of 2,340?", "calc_eval"),
    ("how many kilograms is 180 pounds", "py_convert_units"),
    ("count how many words are in this paragraph", "text_stats"),
    ("make a bar chart of monthly sales for Q1", "chart_draw"),
    (
        "check whether this text matches the pattern of an email address",
        "go_regex_find",
    ),
    (
        "what changed between these two JSON configs?",
        "js_json_diff",
    ),
    ("compute the CRC-32 checksum of 'hello'", "c_hash"),
    ("render a barcode for product code ABC-123", "c_barcode"),
    ("turn this heading into lowercase", "text_transform"),
    (
        "give me summary statistics of each column of this CSV",
        "py_textstats_csv",
    ),
    (
        "open a bug on GitHub: login button does nothing",
        "github_create_issue",
    ),
    (
        "merge PR #42 on GitHub with squash",
        "github_merge_pull_request",
    ),
    (
        "move PROJ-17 in Jira to In Progress",
        "jira_transition_ticket",
    ),
    ("give the Jira ticket OPS-9 to Maria", "jira_assign_ticket"),
    (
        "file a new Linear issue for the flaky signup test",
        "linear-createIssue",
    ),
    (
        "find the Confluence page about onboarding",
        "confluence_search_page",
    ),
    (
        "write a new Notion page with the meeting notes",
        "notion-createPage",
    ),
    (
        "post 'deploy done' in the #releases Slack channel",
        "slack-postMessage",
    ),
    (
        "remind the Slack team tomorrow about the retro",
        "slack-createReminder",
    ),
    (
        "set up a Teams meeting with the design team on Friday",
        "teams-scheduleMeeting",
    ),
    (
        "fetch last week's Zoom recording so I can save it",
        "zoom_download_recording",
    ),
    (
        "email the report to alice@example.com via Gmail",
        "gmail-sendEmail",
    ),
    (
        "put a dentist appointment on my Google Calendar for Monday 9am",
        "gcal-scheduleEvent",
    ),
    (
        "am I free on Thursday afternoon? check my Google calendar availability",
        "gcal-queryAvailability",
    ),
    (
        "upload the quarterly report to Google Drive",
        "gdrive_upload_file",
    ),
    (
        "get a share link for the Dropbox folder photos",
        "dropbox_create_shared_link",
    ),
    (
        "restore an older revision of budget.xlsx in Dropbox",
        "dropbox_restore_file_revision",
    ),
    (
        "generate a temporary download URL for an S3 object",
        "s3_create_presigned_url",
    ),
    (
        "give the customer their money back for Stripe charge ch_123",
        "stripe_refund_charge",
    ),
    (
        "stop the Stripe subscription of customer cus_9",
        "stripe_cancel_subscription",
    ),
    (
        "what's going on with PayPal dispute PP-D-77? settle it",
        "paypal_resolve_dispute",
    ),
    (
        "how many units of SKU 55 are in stock in Shopify",
        "shopify-getInventoryLevel",
    ),
    (
        "make a 20% off discount code in Shopify",
        "shopify-createDiscountCode",
    ),
    (
        "record a $45 taxi expense in QuickBooks",
        "quickbooks_create_expense",
    ),
    (
        "show the latest bank transactions in Xero",
        "xero_list_bank_transaction",
    ),
    (
        "add a new sales lead to Salesforce: Acme Corp",
        "salesforce_create_lead",
    ),
    (
        "update the deal stage to closed-won in HubSpot",
        "hubspot-updateDeal",
    ),
    (
        "mark Zendesk ticket 881 as solved",
        "zendesk_resolve_ticket",
    ),
    (
        "text +15551234567 a verification code using Twilio SMS",
        "twilio_send_sms",
    ),
    (
        "send the newsletter campaign to our Mailchimp audience",
        "mailchimp-sendCampaign",
    ),
    (
        "unsubscribe bob@example.com from the Mailchimp list",
        "mailchimp-deleteSubscriber",
    ),
    (
        "page the on-call engineer on PagerDuty: database down",
        "pagerduty_create_incident",
    ),
    (
        "ack the PagerDuty incident so it stops escalating",
        "pagerduty_acknowledge_incident",
    ),
    (
        "what was the CPU usage over the last hour in Datadog",
        "datadog-queryMetric",
    ),
    ("mark the Sentry error as fixed", "sentry_resolve_issue"),
    (
        "bump the web deployment in Kubernetes to 5 replicas",
        "kubernetes-scaleDeployment",
    ),
    (
        "restart the nginx Docker container",
        "docker_restart_container",
    ),
    (
        "point www at the new server IP in Cloudflare DNS",
        "cloudflare-updateDnsRecord",
    ),
    (
        "purge the Cloudflare cache for our site",
        "cloudflare-deleteCache",
    ),
    ("play Bohemian Rhapsody on Spotify", "spotify_play_track"),
];

/// What an operation says, and its arguments: `{n}` is the resource in
/// words, `{s}` the service's display name, `{id}` the resource's id name.
fn operation(
    op: &str,
) -> (
    &'static str,
    Vec<(&'static str, &'static str, &'static str)>,
) {
    let id = ("{id}", "string", "ID of the {n}.");
    let limit = ("limit", "integer", "Maximum number of results to return.");
    match op {
        "create" => (
            "Create a new {n} in {s}.",
            vec![
                ("name", "string", "Name or title of the new {n}."),
                (
                    "details",
                    "string",
                    "Body text or other details of the {n}.",
                ),
            ],
        ),
        "get" => (
            "Fetch one {n} from {s} by its ID, with all its fields.",
            vec![id],
        ),
        "list" => (
            "List the {n}s in {s}, newest first, with optional filters.",
            vec![
                ("filter", "string", "Only {n}s matching this filter."),
                limit,
            ],
        ),
        "update" => (
            "Change fields of an existing {n} in {s}.",
            vec![
                id,
                (
                    "fields",
                    "object",
                    "The fields to change and their new values.",
                ),
            ],
        ),
        "delete" => ("Permanently delete a {n} from {s}.", vec![id]),
        "search" => (
            "Search the {n}s of {s} by keywords.",
            vec![("query", "string", "Keywords to match."), limit],
        ),
        "close" => (
            "Close a {n} in {s}, optionally with a closing comment.",
            vec![id, ("comment", "string", "Why it is closed.")],
        ),
        "comment" => (
            "Add a comment to a {n} in {s}.",
            vec![id, ("body", "string", "The comment text (Markdown).")],
        ),
        "merge" => (
            "Merge a {n} in {s} into its target branch.",
            vec![id, ("method", "string", "merge, squash or rebase.")],
        ),
        "assign" => (
            "Assign a {n} in {s} to a person.",
            vec![
                id,
                ("assignee", "string", "User name or email of the new owner."),
            ],
        ),
        "transition" => (
            "Move a {n} in {s} to another workflow status.",
            vec![
                id,
                (
                    "status",
                    "string",
                    "Target status, e.g. To Do, In Progress, Done.",
                ),
            ],
        ),
        "send" => (
            "Send a {n} through {s}.",
            vec![
                ("to", "string", "Recipient address or number."),
                ("body", "string", "Content of the {n}."),
            ],
        ),
        "post" => (
            "Post a {n} to a {s} channel.",
            vec![
                ("channel", "string", "Channel name or ID."),
                ("text", "string", "The text to post."),
            ],
        ),
        "refund" => (
            "Refund a {n} in {s}, fully or in part.",
            vec![
                id,
                (
                    "amount",
                    "integer",
                    "Amount to refund in cents; all of it if left out.",
                ),
            ],
        ),
        "cancel" => (
            "Cancel a {n} in {s}.",
            vec![id, ("reason", "string", "Why it is cancelled.")],
        ),
        "upload" => (
            "Upload a file as a {n} to {s}.",
            vec![
                ("path", "string", "Destination path."),
                ("content", "string", "File content, base64-encoded."),
            ],
        ),
        "download" => (
            "Download a {n} from {s} and return its content.",
            vec![("path", "string", "Path or ID of the {n}.")],
        ),
        "schedule" => (
            "Schedule a {n} in {s} at a given time.",
            vec![
                ("title", "string", "What the {n} is about."),
                ("start_time", "string", "Start time, ISO 8601."),
                ("attendees", "array", "Email addresses to invite."),
            ],
        ),
        "archive" => (
            "Archive a {n} in {s} so it no longer shows among active ones.",
            vec![id],
        ),
        "restart" => ("Restart a {n} in {s}.", vec![id]),
        "scale" => (
            "Change how many replicas a {n} in {s} runs.",
            vec![id, ("replicas", "integer", "Desired replica count.")],
        ),
        "play" => (
            "Start playing a {n} on {s}.",
            vec![
                id,
                (
                    "device",
                    "string",
                    "Device to play on; the active one if left out.",
                ),
            ],
        ),
        "acknowledge" => (
            "Acknowledge a {n} in {s} so that escalation stops.",
            vec![id],
        ),
        "resolve" => (
            "Mark a {n} in {s} as resolved.",
            vec![id, ("note", "string", "Resolution note.")],
        ),
        "invite" => (
            "Invite a {n} to {s} by email.",
            vec![
                ("email", "string", "Email address to invite."),
                ("role", "string", "Role to grant."),
            ],
        ),
        "query" => (
            "Run a {n} query in {s} and return the matching results.",
            vec![
                ("query", "string", "The query expression."),
                ("from", "string", "Start of the time range."),
                ("to", "string", "End of the time range."),
            ],
        ),
        "restore" => ("Restore a {n} in {s}.", vec![id]),
        other => panic!("no template for operation {other}"),
    }
}

fn camel(words: &str) -> String {
    words
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The generated tools: 40 services x 4 resources x 3 operations.
fn generated() -> Vec<ToolSpec> {
    let mut specs = Vec::new();
    for line in SERVICES {
        let [service, display, kind, resources] = line.split('|').collect::<Vec<_>>()[..] else {
            panic!("bad service line {line}");
        };
        for resource in resources.split(';') {
            let (noun, ops) = resource.split_once(':').expect("resource:ops");
            let words = noun.replace('_', " ");
            let id = format!("{noun}_id");
            for op in ops.split(',') {
                let (description, args) = operation(op);
                let fill = |t: &str| {
                    t.replace("{n}", &words)
                        .replace("{s}", display)
                        .replace("{id}", &id)
                };
                let name = match kind {
                    "mcp" => format!("{service}-{op}{}", camel(noun)),
                    _ => format!("{service}_{op}_{noun}"),
                };
                let mut properties = serde_json::Map::new();
                let mut required = Vec::new();
                for (arg, ty, arg_description) in &args {
                    let arg = fill(arg);
                    let mut schema = json!({"type": ty, "description": fill(arg_description)});
                    if *ty == "array" {
                        schema["items"] = json!({"type": "string"});
                    }
                    if required.is_empty() {
                        required.push(Value::from(arg.clone()));
                    }
                    properties.insert(arg, schema);
                }
                specs.push(ToolSpec {
                    name,
                    description: fill(description),
                    input_schema: json!({
                        "type": "object",
                        "properties": properties,
                        "required": required,
                    }),
                });
            }
        }
    }
    specs
}

/// Estimated tokens of the definitions of `specs` as a request carries
/// them: JSON bytes / 4.
fn tokens<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> usize {
    let list: Vec<Value> = specs
        .into_iter()
        .map(|s| json!({"name": s.name, "description": s.description, "input_schema": s.input_schema}))
        .collect();
    json!(list).to_string().len() / 4
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

fn main() -> anyhow::Result<()> {
    let full = std::env::args().any(|a| a == "--bench");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let plugins = root.join("target/plugins");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let toolbox = runtime.block_on(
        Toolbox::builder(HostConfig {
            cache_dir: Some(root.join("target/bench-cache")),
            ..HostConfig::default()
        })
        .plugins(&plugins)
        .build(),
    )?;
    let registry = toolbox.registry();
    let bundled = registry.snapshot().len();
    anyhow::ensure!(
        bundled > 0,
        "no bundled plugin in {}: build them with `bash plugins/build.sh`",
        plugins.display()
    );
    for spec in generated().into_iter().take(TOOLS.saturating_sub(bundled)) {
        registry.register(NativeTool::new(
            spec.name,
            spec.description,
            spec.input_schema,
            |_| async { Ok(json!(null)) },
        ))?;
    }
    let tools = registry.snapshot();
    let specs: Vec<&ToolSpec> = tools.specs().collect();

    // Building the index, as `ToolSet::index` does once per snapshot.
    let rounds = if full { 200 } else { 20 };
    let mut build = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        let index = ToolIndex::new(specs.iter().copied());
        build.push(started.elapsed());
        assert_eq!(index.len(), specs.len());
    }
    let index = tools.index();

    let full_tokens = tokens(specs.iter().copied());
    let search = tool_search_spec();
    let always: Vec<&ToolSpec> = ALWAYS_ON
        .iter()
        .map(|name| tools.get(name).map(|t| t.spec()))
        .collect::<Option<_>>()
        .ok_or_else(|| anyhow::anyhow!("an always-on tool is missing: {ALWAYS_ON:?}"))?;
    let (mut top1, mut top5, mut deferred_sum, mut deferred_max) = (0, 0, 0, 0);
    let mut query_times = Vec::new();
    let mut misses = Vec::new();
    for (task, want) in TASKS {
        anyhow::ensure!(
            tools.contains(want),
            "task {task:?} wants a missing tool {want}"
        );
        let started = Instant::now();
        let hits = index.search(task, TOP);
        query_times.push(started.elapsed());
        let found: Vec<&ToolSpec> = hits
            .iter()
            .filter_map(|h| tools.get(&h.name).map(|t| t.spec()))
            .filter(|s| !ALWAYS_ON.contains(&s.name.as_str()))
            .collect();
        let sent = tokens(
            std::iter::once(&search)
                .chain(always.iter().copied())
                .chain(found),
        );
        deferred_sum += sent;
        deferred_max = deferred_max.max(sent);
        let rank = hits.iter().position(|h| h.name == *want);
        top1 += usize::from(rank == Some(0));
        top5 += usize::from(rank.is_some());
        if rank.is_none() {
            misses.push(format!(
                "  {task:?}: want {want}, found {:?}",
                hits.iter().map(|h| h.name.as_str()).collect::<Vec<_>>()
            ));
        }
    }
    let mut held = Vec::new();
    for (label, set) in [("held out", HELD_OUT), ("held out 2", HELD_OUT_2)] {
        let mut found = 0;
        for (task, want) in set {
            anyhow::ensure!(
                tools.contains(want),
                "{label} task {task:?} wants a missing tool {want}"
            );
            let hits = index.search(task, TOP);
            if hits.iter().any(|h| h.name == *want) {
                found += 1;
            } else {
                misses.push(format!(
                    "  ({label}) {task:?}: want {want}, found {:?}",
                    hits.iter().map(|h| h.name.as_str()).collect::<Vec<_>>()
                ));
            }
        }
        held.push((label, found, set.len()));
    }
    let n = TASKS.len();
    let deferred_mean = deferred_sum / n;
    let ratio = deferred_mean as f64 / full_tokens as f64;
    let top5_rate = top5 as f64 / n as f64;
    println!(
        "tool search: {} tools ({bundled} bundled, {} generated), {n} tasks; tokens = JSON bytes / 4 of the tool definitions",
        specs.len(),
        specs.len() - bundled
    );
    println!("| measure | value | floor |");
    println!("| --- | ---: | --- |");
    println!("| tokens per request, full list | {full_tokens} | |");
    println!(
        "| tokens per request, deferred (tool_search + {} always-on + top {TOP}), mean / max | {deferred_mean} / {deferred_max} | |",
        ALWAYS_ON.len()
    );
    println!(
        "| deferred / full (mean) | {:.1}% | ≤ 20% {} |",
        ratio * 100.0,
        if ratio <= 0.20 { "met" } else { "MISSED" }
    );
    println!(
        "| right tool first (top 1) | {top1}/{n} ({:.0}%) | |",
        top1 as f64 * 100.0 / n as f64
    );
    println!(
        "| right tool in top {TOP} | {top5}/{n} ({:.0}%) | ≥ 90% {} |",
        top5_rate * 100.0,
        if top5_rate >= 0.90 { "met" } else { "MISSED" }
    );
    for (label, found, total) in &held {
        println!(
            "| right tool in top {TOP}, {label} | {found}/{total} ({:.0}%) | (reported) |",
            *found as f64 * 100.0 / *total as f64
        );
    }
    println!(
        "| index build, {} tools, p50 / max ({rounds} builds) | {:?} / {:?} | |",
        specs.len(),
        percentile(&mut build, 0.5),
        build.iter().max().copied().unwrap_or_default()
    );
    println!(
        "| one search, p50 / max ({n} tasks) | {:?} / {:?} | |",
        percentile(&mut query_times, 0.5),
        query_times.iter().max().copied().unwrap_or_default()
    );
    if !misses.is_empty() {
        println!("not in the top {TOP}:");
        for miss in &misses {
            println!("{miss}");
        }
    }
    anyhow::ensure!(
        ratio <= 0.20,
        "deferred requests carry {:.1}% of the full list's tokens (floor 20%)",
        ratio * 100.0
    );
    anyhow::ensure!(
        top5_rate >= 0.90,
        "the right tool was in the top {TOP} for {:.0}% of the tasks (floor 90%)",
        top5_rate * 100.0
    );
    Ok(())
}
