use std::sync::Arc;
use std::time::Duration;

use super::*;

fn memory() -> SqliteTaskStore {
    SqliteTaskStore::open_in_memory(StoreBudget::default()).unwrap()
}

#[test]
fn a_task_is_seen_only_by_its_owner() {
    let store = memory();
    let task = store
        .create(NewTask::new("alice", "crawl", 60_000))
        .unwrap();
    assert_eq!(
        store.get("alice", &task.id).unwrap().status,
        TaskStatus::Working
    );
    assert!(matches!(
        store.get("bob", &task.id),
        Err(TaskError::NotFound { .. })
    ));
    assert!(matches!(
        store.request_cancel("bob", &task.id),
        Err(TaskError::NotFound { .. })
    ));
    assert!(store.list("bob", None, 10).unwrap().is_empty());
    assert_eq!(store.list("alice", None, 10).unwrap(), vec![task]);
}

#[test]
fn list_pages_oldest_first() {
    let store = memory();
    let ids: Vec<String> = (0..5)
        .map(|_| store.create(NewTask::new("a", "t", 60_000)).unwrap().id)
        .collect();
    let first = store.list("a", None, 2).unwrap();
    let second = store.list("a", Some(&first[1].id), 2).unwrap();
    let third = store.list("a", Some(&second[1].id), 2).unwrap();
    let listed: Vec<String> = [first, second, third]
        .concat()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(listed, ids);
}

#[test]
fn a_finished_task_cannot_change() {
    let store = memory();
    let task = store.create(NewTask::new("a", "t", 60_000)).unwrap();
    store
        .set_state(
            &task.id,
            TaskStatus::Working,
            Some("half"),
            Some((1.0, Some(2.0))),
        )
        .unwrap();
    let done = store
        .finish(&task.id, TaskStatus::Completed, None, Some("{}"))
        .unwrap();
    assert_eq!(done.progress, Some((1.0, Some(2.0))));
    assert!(matches!(
        store.finish(&task.id, TaskStatus::Failed, None, None),
        Err(TaskError::Terminal {
            status: TaskStatus::Completed,
            ..
        })
    ));
    assert!(matches!(
        store.request_cancel("a", &task.id),
        Err(TaskError::Terminal { .. })
    ));
}

#[test]
fn budgets_are_typed_errors() {
    let store = SqliteTaskStore::open_in_memory(StoreBudget::new(8, 2)).unwrap();
    let task = store.create(NewTask::new("a", "t", 60_000)).unwrap();
    store.create(NewTask::new("a", "t", 60_000)).unwrap();
    assert!(matches!(
        store.create(NewTask::new("a", "t", 60_000)),
        Err(TaskError::TooManyTasks { limit: 2 })
    ));
    // Another owner has a budget of its own.
    store.create(NewTask::new("b", "t", 60_000)).unwrap();
    let error = store
        .finish(&task.id, TaskStatus::Completed, None, Some("\"123456789\""))
        .unwrap_err();
    assert!(matches!(
        error,
        TaskError::ResultTooLarge { size: 11, limit: 8 }
    ));
    // The task ends `failed`, saying why, with no result.
    let task = store.get("a", &task.id).unwrap();
    assert_eq!(task.status, TaskStatus::Failed);
    assert_eq!(task.result, None);
    assert!(task.status_message.unwrap().contains("max_result_kb"));
}

#[test]
fn expired_tasks_are_gone_and_free_the_budget() {
    let store = SqliteTaskStore::open_in_memory(StoreBudget::new(1024, 1)).unwrap();
    let task = store.create(NewTask::new("a", "t", 0)).unwrap();
    assert!(matches!(
        store.get("a", &task.id),
        Err(TaskError::NotFound { .. })
    ));
    // Creating purges the owner's expired tasks first.
    let kept = store.create(NewTask::new("a", "t", 60_000)).unwrap();
    assert_eq!(store.purge_expired(now_ms()).unwrap(), 0);
    assert_eq!(store.purge_expired(kept.expires_at_ms()).unwrap(), 1);
}

#[test]
fn reopening_a_file_fails_running_tasks_and_keeps_finished_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/tasks.sqlite3");
    let (running, done) = {
        let store = SqliteTaskStore::open(&path, StoreBudget::default()).unwrap();
        let running = store.create(NewTask::new("a", "t", 60_000)).unwrap();
        let done = store.create(NewTask::new("a", "t", 60_000)).unwrap();
        store
            .finish(&done.id, TaskStatus::Completed, None, Some("[1]"))
            .unwrap();
        (running.id, done.id)
    };
    let store = SqliteTaskStore::open(&path, StoreBudget::default()).unwrap();
    let running = store.get("a", &running).unwrap();
    assert_eq!(running.status, TaskStatus::Failed);
    assert_eq!(running.status_message.as_deref(), Some(RESTART_REASON));
    let done = store.get("a", &done).unwrap();
    assert_eq!(
        (done.status, done.result.as_deref()),
        (TaskStatus::Completed, Some("[1]"))
    );
}

#[test]
fn support_override_takes_the_longest_pattern() {
    let mut config = TasksConfig::default();
    config.support.insert("*".into(), TaskSupport::Forbidden);
    config
        .support
        .insert("crawl_*".into(), TaskSupport::Required);
    assert_eq!(
        config.support_for("crawl_site", TaskSupport::Optional),
        TaskSupport::Required
    );
    assert_eq!(
        config.support_for("echo", TaskSupport::Optional),
        TaskSupport::Forbidden
    );
    assert_eq!(
        TasksConfig::default().support_for("echo", TaskSupport::Optional),
        TaskSupport::Optional
    );
    assert!(glob_match("a*b*c", "axxbyyc"));
    assert!(!glob_match("a*b", "ab_"));
    assert_eq!(config.deadline(Some(99_999)), Duration::from_secs(3600));
    assert_eq!(config.deadline(None), Duration::from_secs(600));
}

#[test]
fn the_config_table_parses() {
    let config: TasksConfig =
        toml::from_str("store = \"t.db\"\nttl_secs = 5\n[support]\ncrawl = \"required\"\n")
            .unwrap();
    assert_eq!(config.ttl_secs, 5);
    assert_eq!(config.support["crawl"], TaskSupport::Required);
    assert!(toml::from_str::<TasksConfig>("support = { x = \"maybe\" }").is_err());
}

fn runner() -> TaskRunner {
    TaskRunner::new(Arc::new(memory()))
}

#[tokio::test]
async fn the_runner_stores_the_outcome() {
    let runner = runner();
    let (go, wait) = tokio::sync::oneshot::channel::<()>();
    let task = runner
        .start(
            NewTask::new("a", "t", 60_000),
            Duration::from_secs(60),
            |control| async move {
                control.working(Some("half way"), Some((1.0, Some(2.0))));
                let _ = wait.await;
                TaskOutcome::Completed("42".into())
            },
        )
        .unwrap();
    // Created before `start` returned.
    assert!(!runner.get("a", &task.id).unwrap().status.is_terminal());
    go.send(()).unwrap();
    let done = runner.wait("a", &task.id).await.unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.result.as_deref(), Some("42"));
    assert_eq!(done.status_message.as_deref(), None);
    assert_eq!(done.progress, Some((1.0, Some(2.0))));
}

#[tokio::test]
async fn cancel_drops_the_work() {
    struct Dropped(Option<tokio::sync::oneshot::Sender<()>>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            let _ = self.0.take().map(|s| s.send(()));
        }
    }
    let runner = runner();
    let (dropped_tx, dropped) = tokio::sync::oneshot::channel();
    let (started_tx, started) = tokio::sync::oneshot::channel();
    let task = runner
        .start(
            NewTask::new("a", "t", 60_000),
            Duration::from_secs(60),
            |_| async move {
                let _guard = Dropped(Some(dropped_tx));
                let _ = started_tx.send(());
                std::future::pending::<TaskOutcome>().await
            },
        )
        .unwrap();
    started.await.unwrap();
    assert!(matches!(
        runner.cancel("b", &task.id),
        Err(TaskError::NotFound { .. })
    ));
    assert!(runner.cancel("a", &task.id).unwrap().cancel_requested);
    dropped.await.unwrap();
    let done = runner.wait("a", &task.id).await.unwrap();
    assert_eq!(done.status, TaskStatus::Cancelled);
    assert!(matches!(
        runner.cancel("a", &task.id),
        Err(TaskError::Terminal { .. })
    ));
}

#[tokio::test]
async fn the_deadline_fails_the_task() {
    let runner = runner();
    let task = runner
        .start(
            NewTask::new("a", "t", 60_000),
            Duration::from_millis(50),
            |_| std::future::pending::<TaskOutcome>(),
        )
        .unwrap();
    let done = runner.wait("a", &task.id).await.unwrap();
    assert_eq!(done.status, TaskStatus::Failed);
    assert!(done.status_message.unwrap().contains("deadline of 0.05 s"));
}

#[test]
fn a_manifest_says_its_task_support() {
    let manifest: crate::plugin::Manifest =
        toml::from_str("[task]\nsupport = \"required\"\ndeadline_secs = 90\n").unwrap();
    assert_eq!(manifest.task.support, TaskSupport::Required);
    assert_eq!(manifest.task.deadline_secs, Some(90));
    let plain: crate::plugin::Manifest = toml::from_str("").unwrap();
    assert_eq!(plain.task.support, TaskSupport::Forbidden);
    assert!(toml::from_str::<crate::plugin::Manifest>("[task]\nsupport = \"always\"\n").is_err());
}

#[test]
fn the_store_path_comes_from_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolhost.toml");
    std::fs::write(&path, "cache_dir = \"cache\"\n").unwrap();
    let config = crate::HostConfig::from_file(&path).unwrap();
    assert_eq!(
        config.task_store_path(),
        Some(dir.path().join("cache/tasks.sqlite3"))
    );
    std::fs::write(
        &path,
        "[tasks]\nstore = \"t/tasks.db\"\nmax_per_client = 3\n",
    )
    .unwrap();
    let config = crate::HostConfig::from_file(&path).unwrap();
    assert_eq!(
        config.task_store_path(),
        Some(dir.path().join("t/tasks.db"))
    );
    assert_eq!(config.tasks.budget().max_tasks_per_owner, 3);
    assert_eq!(crate::HostConfig::default().task_store_path(), None);
}
