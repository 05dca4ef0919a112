//! RESP: the request decoder, the inline splitter, the reply encoder, and a reply tree for parsing replies.

pub mod decode;
pub mod encode;
pub mod inline;
pub mod value;
