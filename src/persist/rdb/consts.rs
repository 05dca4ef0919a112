//! RDB opcodes, object types and encodings, with Redis's numbers (rdb.h).

/// The version this server writes (Redis 7.0).
pub const RDB_VERSION: u16 = 10;
/// The newest version it reads (Redis 7.4).
pub const RDB_VERSION_MAX_READ: u16 = 12;

pub const TYPE_STRING: u8 = 0;
pub const TYPE_LIST: u8 = 1;
pub const TYPE_SET: u8 = 2;
pub const TYPE_ZSET: u8 = 3;
pub const TYPE_HASH: u8 = 4;
pub const TYPE_ZSET_2: u8 = 5;
pub const TYPE_MODULE_PRE_GA: u8 = 6;
pub const TYPE_MODULE_2: u8 = 7;
pub const TYPE_HASH_ZIPMAP: u8 = 9;
pub const TYPE_LIST_ZIPLIST: u8 = 10;
pub const TYPE_SET_INTSET: u8 = 11;
pub const TYPE_ZSET_ZIPLIST: u8 = 12;
pub const TYPE_HASH_ZIPLIST: u8 = 13;
pub const TYPE_LIST_QUICKLIST: u8 = 14;
pub const TYPE_STREAM_LISTPACKS: u8 = 15;
pub const TYPE_HASH_LISTPACK: u8 = 16;
pub const TYPE_ZSET_LISTPACK: u8 = 17;
pub const TYPE_LIST_QUICKLIST_2: u8 = 18;
pub const TYPE_STREAM_LISTPACKS_2: u8 = 19;
/// Redis 7.2.
pub const TYPE_SET_LISTPACK: u8 = 20;
pub const TYPE_STREAM_LISTPACKS_3: u8 = 21;
/// Redis 7.4: hashes whose fields carry their own TTLs.
pub const TYPE_HASH_METADATA_PRE_GA: u8 = 22;
pub const TYPE_HASH_LISTPACK_EX_PRE_GA: u8 = 23;
pub const TYPE_HASH_METADATA: u8 = 24;
pub const TYPE_HASH_LISTPACK_EX: u8 = 25;

/// Redis 7.4, cluster mode only: slot id and sizes (skipped).
pub const OPCODE_SLOT_INFO: u8 = 244;
pub const OPCODE_FUNCTION2: u8 = 245;
/// Function libraries as Redis 7.0 rc1/rc2 wrote them.
pub const OPCODE_FUNCTION_PRE_GA: u8 = 246;
pub const OPCODE_MODULE_AUX: u8 = 247;
pub const OPCODE_IDLE: u8 = 248;
pub const OPCODE_FREQ: u8 = 249;
pub const OPCODE_AUX: u8 = 250;
pub const OPCODE_RESIZEDB: u8 = 251;
pub const OPCODE_EXPIRETIME_MS: u8 = 252;
pub const OPCODE_EXPIRETIME: u8 = 253;
pub const OPCODE_SELECTDB: u8 = 254;
pub const OPCODE_EOF: u8 = 255;

/// Length prefixes: 6, 14, 32 and 64 bit lengths, and the special string encodings.
pub const LEN_6BIT: u8 = 0;
pub const LEN_14BIT: u8 = 1;
pub const LEN_32BIT: u8 = 0x80;
pub const LEN_64BIT: u8 = 0x81;
pub const ENCVAL: u8 = 3;
pub const ENC_INT8: u8 = 0;
pub const ENC_INT16: u8 = 1;
pub const ENC_INT32: u8 = 2;
pub const ENC_LZF: u8 = 3;

/// Quicklist node containers (RDB_TYPE_LIST_QUICKLIST_2).
pub const QUICKLIST_PLAIN: u64 = 1;
pub const QUICKLIST_PACKED: u64 = 2;
