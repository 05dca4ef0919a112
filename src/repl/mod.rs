//! Replication: the replica side (REPLICAOF, the link to a master); the master side joins it here.

pub mod replica;
