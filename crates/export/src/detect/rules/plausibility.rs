//! Shared plausibility: whether a value a rule captured is a credential at
//! all, whatever rule found it. Each test is a named function in the module
//! for its kind of evidence; the engine ([`super::engine`]) runs them after a
//! rule's own check and before the rule's veto.

mod code;
mod keys;
mod placeholder;
mod prose;
mod values;

pub(crate) use code::*;
pub(crate) use keys::*;
pub use placeholder::*;
pub(crate) use prose::*;
pub use values::*;
