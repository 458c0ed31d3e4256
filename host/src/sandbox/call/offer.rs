//! A contract 0.3 call (a list, a read, a prompt, a completion): run as a
//! tool call is, on a fresh instance under the plugin's limits and grants,
//! its answer held to the output cap.

use super::super::http;
use super::super::offer_calls::{GuestOfferError, OfferAnswer, OfferCall};
use super::super::state::CallSinks;
use super::{Guest, Slot};
use crate::tools::{ToolError, ToolErrorKind};

impl Guest {
    /// Whether the component exports any of contract 0.3's interfaces.
    pub(crate) fn has_offers(&self) -> bool {
        self.pre.has_offers()
    }

    /// Make `call` on a fresh instance, dropped afterwards.
    ///
    /// # Errors
    ///
    /// The outer error is the sandbox's (a limit, a trap, the output cap,
    /// no free instance slot); the inner one the plugin's own.
    pub(crate) async fn call_offer(
        &self,
        call: OfferCall,
    ) -> Result<Result<OfferAnswer, GuestOfferError>, ToolError> {
        let label = call.label();
        let _slot = self.slot(Slot::Wait).await?;
        let mut store = self.new_store()?;
        store.data_mut().attach(&CallSinks::default(), label);
        let result = self
            .bounded(&mut store, async |store| {
                let plugin = self.instantiate_timed(store).await?;
                plugin.offers().call(&mut *store, call).await
            })
            .await;
        let refusal = store.data_mut().http.take_refusal();
        let answer = http::explain(result, refusal)?;
        if let Ok(answer) = &answer {
            let size = answer.size();
            if size as u64 > self.limits.output_bytes {
                return Err(ToolError::new(
                    ToolErrorKind::OutputTooLarge,
                    format!(
                        "`{label}` returned {size} bytes; the plugin's output cap is {} bytes. Return less (fewer entries, a smaller resource or image), or raise the plugin's `output_kb`",
                        self.limits.output_bytes
                    ),
                ));
            }
        }
        Ok(answer)
    }
}
