//! What a verifier learnt of a token, kept by the token's SHA-256 until a
//! deadline: a client's requests then cost one hash and a lookup, not a
//! signature check or a round trip to the issuer each. Bounded: past
//! [`MAX_KEPT`] entries, the expired go, then all.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// Answers kept at most.
const MAX_KEPT: usize = 10_000;

/// Answers about tokens, each until its deadline.
pub(super) struct Kept<T> {
    answers: Mutex<HashMap<[u8; 32], (Instant, T)>>,
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Self {
            answers: Mutex::default(),
        }
    }
}

/// What identifies a token among those kept (never the token itself).
pub(super) fn key(token: &str) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(token.as_bytes()).into()
}

impl<T: Clone> Kept<T> {
    /// The answer kept for `key`, if its deadline has not passed.
    pub(super) fn get(&self, key: &[u8; 32]) -> Option<T> {
        let answers = self.lock();
        let (until, answer) = answers.get(key)?;
        (*until > Instant::now()).then(|| answer.clone())
    }

    /// Keep `answer` for `key` until `until`.
    pub(super) fn keep(&self, key: [u8; 32], until: Instant, answer: T) {
        let mut answers = self.lock();
        if answers.len() >= MAX_KEPT {
            let now = Instant::now();
            answers.retain(|_, (until, _)| *until > now);
            if answers.len() >= MAX_KEPT {
                answers.clear();
            }
        }
        answers.insert(key, (until, answer));
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<[u8; 32], (Instant, T)>> {
        self.answers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn an_answer_is_kept_until_its_deadline_and_the_store_is_bounded() {
        let kept = Kept::default();
        let now = Instant::now();
        kept.keep(key("a"), now + Duration::from_secs(60), 1);
        kept.keep(key("b"), now, 2);
        assert_eq!(kept.get(&key("a")), Some(1));
        assert_eq!(kept.get(&key("b")), None, "past its deadline");
        assert_eq!(kept.get(&key("c")), None);
        for i in 0..MAX_KEPT + 10 {
            kept.keep(key(&i.to_string()), now + Duration::from_secs(60), 0);
        }
        assert!(kept.lock().len() <= MAX_KEPT);
    }
}
