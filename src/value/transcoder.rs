//! A codec with the write settings of its peer: what a client is configured with.
//!
//! Reading needs only the [`Codec`]: each peer's flags describe its own values (dalli's two
//! compressors and two serializers are told apart by their magic bytes). Writing follows the
//! peer's defaults unless told otherwise; each peer's options mirror the settings the peer
//! itself has, named as the peer names them.

use super::{Codec, Value, ValueError};

/// What [`Transcoder::encode`] produces: the flags and payload to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The flags to store with the value.
    pub flags: u32,
    /// The payload to store.
    pub bytes: Vec<u8>,
}

/// php-memcached's serializer for arrays, objects and null (`Memcached::OPT_SERIALIZER`).
/// memshard writes the formats it can spell; igbinary and msgpack are read, not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum PhpSerializer {
    /// PHP `serialize()` (type 4): Debian's `memcached.ini` default (`memcached.serializer=php`).
    #[default]
    Php,
    /// `json_encode` (type 6); PHP reads maps back as `stdClass` objects.
    Json,
    /// `json_encode` (type 6) for a reader whose serializer is `json_array` (maps as arrays).
    /// Written exactly like [`PhpSerializer::Json`].
    JsonArray,
}

/// php-memcached's compression method (`Memcached::OPT_COMPRESSION_TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum PhpCompression {
    /// FastLZ (flags 0x50 for a string): the INI default `memcached.compression_type=fastlz`.
    #[default]
    FastLz,
    /// zlib (flags 0x30 for a string).
    Zlib,
}

/// php-memcached 3.2's write settings; the defaults are php-memcached's (`php_memcached.c`,
/// Debian's `memcached.ini`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PhpOptions {
    /// Serializer for null, lists and maps (default [`PhpSerializer::Php`]).
    pub serializer: PhpSerializer,
    /// `OPT_COMPRESSION` (default on).
    pub compression: bool,
    /// `OPT_COMPRESSION_TYPE` (default FastLZ).
    pub compression_type: PhpCompression,
    /// INI `memcached.compression_threshold` (default 2000): strings and serialized values of
    /// at least this many bytes are compressed.
    pub compression_threshold: usize,
    /// INI `memcached.compression_factor` (default 1.3): compressed only if the plain length is
    /// greater than the compressed block's length times this.
    pub compression_factor: f64,
    /// `OPT_USER_FLAGS` (0-65535), stored in flags bits 16-31.
    pub user_flags: u16,
}

impl Default for PhpOptions {
    fn default() -> Self {
        PhpOptions {
            serializer: PhpSerializer::Php,
            compression: true,
            compression_type: PhpCompression::FastLz,
            compression_threshold: 2000,
            compression_factor: 1.3,
            user_flags: 0,
        }
    }
}

/// pylibmc 1.6's write settings (defaults: pylibmc's).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PylibmcOptions {
    /// `set(..., min_compress_len=)`: zlib-compress payloads of at least this many bytes;
    /// 0 (pylibmc's default) never compresses.
    pub min_compress_len: usize,
    /// `set(..., compress_level=)`: zlib level 1-9 (default 6, zlib's `Z_DEFAULT_COMPRESSION`);
    /// 0 disables compression.
    pub compress_level: u32,
}

impl Default for PylibmcOptions {
    fn default() -> Self {
        PylibmcOptions {
            min_compress_len: 0,
            compress_level: 6,
        }
    }
}

/// dalli's serializer (`Dalli::Client.new(..., serializer:)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum DalliSerializer {
    /// Ruby `Marshal` (dalli's default).
    #[default]
    Marshal,
    /// `JSON` (`serializer: JSON`): a client configured so reads these.
    Json,
}

/// dalli's compressor (`compressor:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum DalliCompressor {
    /// `Dalli::Compressor`: zlib (the default).
    #[default]
    Zlib,
    /// `Dalli::GzipCompressor`: gzip.
    Gzip,
}

/// dalli 3.0's write settings (defaults: dalli's).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DalliOptions {
    /// `serializer:` (default Marshal).
    pub serializer: DalliSerializer,
    /// `compress:` (default true).
    pub compress: bool,
    /// `compressor:` (default zlib).
    pub compressor: DalliCompressor,
    /// `compression_min_size:` (default 4096): serialized payloads of at least this many bytes
    /// are compressed.
    pub compression_min_size: usize,
    /// `raw: true`: store text and bytes as they are, flags 0 (dalli reads them back as binary
    /// strings).
    pub raw: bool,
}

impl Default for DalliOptions {
    fn default() -> Self {
        DalliOptions {
            serializer: DalliSerializer::Marshal,
            compress: true,
            compressor: DalliCompressor::Zlib,
            compression_min_size: 4096,
            raw: false,
        }
    }
}

/// spymemcached 2.12's `SerializingTranscoder` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpymemcachedOptions {
    /// `setCompressionThreshold` (default 16384): payloads longer than this are gzipped when
    /// that makes them smaller.
    pub compression_threshold: usize,
}

impl Default for SpymemcachedOptions {
    fn default() -> Self {
        SpymemcachedOptions {
            compression_threshold: 16384,
        }
    }
}

macro_rules! with_options {
    ($($(#[$doc:meta])* $set:ident, $get:ident, $field:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        #[must_use]
        pub fn $set(mut self, options: $ty) -> Self {
            self.$field = options;
            self
        }

        /// The options used when this transcoder writes for that peer.
        pub fn $get(&self) -> &$ty {
            &self.$field
        }
    )*};
}

/// A [`Codec`] and the write settings of its peer.
///
/// ```
/// use memshard::value::{Codec, PhpCompression, PhpOptions, Transcoder, Value};
///
/// let mut php = PhpOptions::default();
/// php.compression_type = PhpCompression::Zlib;
/// let t = Transcoder::new(Codec::PhpMemcached).with_php(php);
/// let stored = t.encode(&Value::Int(42), 1 << 20)?;
/// assert_eq!((stored.flags, &stored.bytes[..]), (1, &b"42"[..]));
/// assert_eq!(t.decode(stored.flags, &stored.bytes, 1 << 20)?, Value::Int(42));
/// # Ok::<(), memshard::value::ValueError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transcoder {
    codec: Codec,
    php: PhpOptions,
    pylibmc: PylibmcOptions,
    dalli: DalliOptions,
    spymemcached: SpymemcachedOptions,
}

impl Transcoder {
    /// `codec` with its peer's default settings.
    pub fn new(codec: Codec) -> Self {
        Transcoder {
            codec,
            ..Transcoder::default()
        }
    }

    /// The codec.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    with_options! {
        /// php-memcached's settings (used when the codec is [`Codec::PhpMemcached`]).
        with_php, php_options, php: PhpOptions;
        /// pylibmc's settings (used when the codec is [`Codec::Pylibmc`]).
        with_pylibmc, pylibmc_options, pylibmc: PylibmcOptions;
        /// dalli's settings (used when the codec is [`Codec::Dalli`]).
        with_dalli, dalli_options, dalli: DalliOptions;
        /// spymemcached's settings (used when the codec is [`Codec::Spymemcached`]).
        with_spymemcached, spymemcached_options, spymemcached: SpymemcachedOptions;
    }

    /// `value` as the codec's peer stores a value of that type: flags and payload. A type the
    /// peer cannot store is [`ValueError::Unsupported`]; a payload above `max_value` bytes
    /// (after compression) is [`ValueError::TooLarge`].
    pub fn encode(&self, value: &Value, max_value: usize) -> Result<Encoded, ValueError> {
        super::encode(self, value, max_value)
    }

    /// What the codec's peer stored, decoded: see [`decode`](super::decode).
    pub fn decode(
        &self,
        flags: u32,
        payload: &[u8],
        max_value: usize,
    ) -> Result<Value, ValueError> {
        super::decode(self.codec, flags, payload, max_value)
    }
}

impl From<Codec> for Transcoder {
    fn from(codec: Codec) -> Self {
        Transcoder::new(codec)
    }
}

impl From<&Transcoder> for Transcoder {
    fn from(t: &Transcoder) -> Self {
        t.clone()
    }
}
