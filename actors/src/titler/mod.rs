//! Session naming: phase 1 (the first message, at once) and phase 2 (an
//! LLM title in the background, refreshed as the conversation grows).

pub mod actor;
pub mod llm;
pub mod text;

pub use actor::{GenerateNow, TitleError, Titler};
pub use llm::LlmConfig;
