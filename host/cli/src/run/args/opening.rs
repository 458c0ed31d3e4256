//! `--prompt NAME --arg KEY=VALUE` and `--attach URI`: the prompt's
//! messages and the resources' content open the run, read through the
//! library ([`prompt_messages`], [`attach_resource`]).

use toolhost::runner::{Transcript, attach_resource, prompt_messages};
use toolhost::text::escape_controls;
use toolhost::tools::Offers;

use super::RunArgs;
use crate::offers::{arguments, opening_error};

impl RunArgs {
    /// Put the prompt's messages, then each attached resource, into
    /// `start` after `--system` and `--messages` and before PROMPT.
    ///
    /// # Errors
    ///
    /// An unknown prompt or URI, a missing or unknown argument, content
    /// that cannot go to a model (usage errors); a source that failed.
    pub(in crate::run) async fn open(
        &self,
        start: &mut Transcript,
        offers: &Offers,
    ) -> anyhow::Result<()> {
        let mut opening = Vec::new();
        if let Some(name) = &self.prompt_name {
            let args = arguments(&self.prompt_args)?;
            let messages = prompt_messages(offers, name, args).await.map_err(|e| {
                opening_error(e).context(format!("--prompt {}", escape_controls(name)))
            })?;
            opening.extend(messages);
        }
        for uri in &self.attach {
            let message = attach_resource(offers, uri).await.map_err(|e| {
                opening_error(e).context(format!("--attach {}", escape_controls(uri)))
            })?;
            opening.push(message);
        }
        // The task text, when given, is the last message `start` made.
        let at = start.messages.len() - usize::from(self.prompt.is_some());
        start.messages.splice(at..at, opening);
        Ok(())
    }
}
