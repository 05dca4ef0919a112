//! RESP: the request decoder, the reply encoder, and a reply tree for parsing replies.

pub mod decode;
pub mod encode;
pub mod value;
