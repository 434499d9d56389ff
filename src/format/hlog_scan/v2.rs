//! HdrHistogram's V2 histogram encoding, decoded into the (value, count) pairs it holds: the
//! payload header, the zlib-compressed variant, ZigZag LEB128 counts with runs of empty slots,
//! and the bucket layout that turns a slot index into its value.

use std::fmt;

const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// cookie, payload length, normalizing offset, significant digits, lowest, highest, ratio.
const V2_HEADER_BYTES: usize = 40;
/// The largest inflated payload decoded: a V2 histogram of every value to 2^63 at 5
/// significant digits is under 8 MiB (counts as varints of at most 9 bytes), so more is not
/// a histogram but a zlib stream that inflates without end (a ratio of up to 1032 to 1).
pub(crate) const MAX_PAYLOAD_BYTES: usize = 16 << 20;

/// Why a histogram payload could not be decoded. The scanner turns it into an
/// `io::ErrorKind::InvalidData` error that names the file, which is what its callers act on.
#[derive(Debug)]
pub(super) enum DecodeError {
    /// The header (or the compressed variant's cookie and length) ends early.
    HeaderTruncated,
    /// The compressed variant's zlib stream is shorter than its stated length.
    CompressedTruncated,
    Zlib(flate2::DecompressError),
    /// The zlib stream ends before its end marker.
    ZlibTruncated,
    UnknownCookie(u32),
    /// The inflated payload is not a V2 histogram.
    NotV2,
    /// A normalizing index offset, which HdrHistogram writes only for shifted histograms.
    NormalizingOffset,
    /// Significant digits or lowest trackable value that no HdrHistogram writes.
    Parameters {
        digits: u32,
        lowest: u64,
    },
    /// The counts end before the payload length in the header.
    PayloadTruncated,
    VarintTruncated,
    /// The zlib stream inflates past [`MAX_PAYLOAD_BYTES`].
    TooLarge,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::HeaderTruncated => f.write_str("histogram header truncated"),
            DecodeError::CompressedTruncated => {
                f.write_str("compressed payload shorter than its length")
            }
            DecodeError::Zlib(e) => write!(f, "zlib: {e}"),
            DecodeError::ZlibTruncated => f.write_str("truncated zlib stream"),
            DecodeError::UnknownCookie(cookie) => {
                write!(f, "unknown histogram cookie {cookie:#x}")
            }
            DecodeError::NotV2 => f.write_str("not a V2 histogram"),
            DecodeError::NormalizingOffset => {
                f.write_str("normalizing index offsets are not supported")
            }
            DecodeError::Parameters { digits, lowest } => write!(
                f,
                "unsupported histogram parameters ({digits} digits, lowest {lowest})"
            ),
            DecodeError::PayloadTruncated => f.write_str("payload shorter than its length"),
            DecodeError::VarintTruncated => f.write_str("varint truncated"),
            DecodeError::TooLarge => write!(
                f,
                "the histogram inflates past {}, more than any histogram holds",
                crate::input::format_bytes(MAX_PAYLOAD_BYTES as u64)
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes V2 histograms, keeping its buffers between calls.
#[derive(Default)]
pub(super) struct PayloadDecoder {
    inflated: Vec<u8>,
    inflater: Option<flate2::Decompress>,
}

impl PayloadDecoder {
    /// Appends the histogram's (value, count) pairs to `out`; returns the total count.
    pub(super) fn decode(
        &mut self,
        encoded: &[u8],
        out: &mut Vec<(u64, u64)>,
    ) -> Result<u64, DecodeError> {
        let cookie = read_u32(encoded, 0)?;
        let payload: &[u8] = match cookie {
            V2_COOKIE => encoded,
            V2_COMPRESSED_COOKIE => {
                let len = read_u32(encoded, 4)? as usize;
                let zlib = encoded
                    .get(8..8 + len)
                    .ok_or(DecodeError::CompressedTruncated)?;
                let inflater = self
                    .inflater
                    .get_or_insert_with(|| flate2::Decompress::new(true));
                inflater.reset(true);
                self.inflated.clear();
                // The V2 header says how long the payload is; grow until the stream ends.
                self.inflated.reserve(4096);
                loop {
                    let before = inflater.total_in() as usize;
                    let status = inflater
                        .decompress_vec(
                            &zlib[before..],
                            &mut self.inflated,
                            flate2::FlushDecompress::None,
                        )
                        .map_err(DecodeError::Zlib)?;
                    match status {
                        flate2::Status::StreamEnd => break,
                        _ if self.inflated.len() >= MAX_PAYLOAD_BYTES => {
                            return Err(DecodeError::TooLarge);
                        }
                        _ if self.inflated.len() == self.inflated.capacity() => {
                            let more = self
                                .inflated
                                .capacity()
                                .min(MAX_PAYLOAD_BYTES - self.inflated.len());
                            self.inflated.reserve_exact(more);
                        }
                        _ if inflater.total_in() as usize == zlib.len() => {
                            return Err(DecodeError::ZlibTruncated);
                        }
                        _ => {}
                    }
                }
                &self.inflated
            }
            _ => return Err(DecodeError::UnknownCookie(cookie)),
        };
        if read_u32(payload, 0)? != V2_COOKIE {
            return Err(DecodeError::NotV2);
        }
        let counts_len = read_u32(payload, 4)? as usize;
        if read_u32(payload, 8)? != 0 {
            return Err(DecodeError::NormalizingOffset);
        }
        let digits = read_u32(payload, 12)?;
        let lowest = read_u64(payload, 16)?;
        let layout = BucketLayout::new(digits, lowest)?;
        let mut body = payload
            .get(V2_HEADER_BYTES..V2_HEADER_BYTES + counts_len)
            .ok_or(DecodeError::PayloadTruncated)?;
        let mut index: u64 = 0;
        let mut total: u64 = 0;
        while !body.is_empty() {
            let (raw, used) = read_varint(body)?;
            body = &body[used..];
            let n = ((raw >> 1) as i64) ^ -((raw & 1) as i64);
            if n < 0 {
                index += n.unsigned_abs();
            } else {
                if n > 0 {
                    out.push((layout.highest_equivalent(index), n as u64));
                    total += n as u64;
                }
                index += 1;
            }
        }
        Ok(total)
    }
}

/// How HdrHistogram maps a counts-array index to the values it stands for.
struct BucketLayout {
    unit_magnitude: u32,
    sub_bucket_half_count_magnitude: u32,
    sub_bucket_half_count: u64,
}

impl BucketLayout {
    fn new(digits: u32, lowest: u64) -> Result<Self, DecodeError> {
        if !(1..=5).contains(&digits) || lowest == 0 {
            return Err(DecodeError::Parameters { digits, lowest });
        }
        let single_unit_resolution = 2 * 10u64.pow(digits);
        let sub_bucket_count_magnitude = 64 - (single_unit_resolution - 1).leading_zeros();
        let sub_bucket_half_count_magnitude = sub_bucket_count_magnitude.max(1) - 1;
        Ok(BucketLayout {
            unit_magnitude: 63 - lowest.leading_zeros(),
            sub_bucket_half_count_magnitude,
            sub_bucket_half_count: 1 << sub_bucket_half_count_magnitude,
        })
    }

    /// The highest value that lands in slot `index`.
    fn highest_equivalent(&self, index: u64) -> u64 {
        let mut bucket = (index >> self.sub_bucket_half_count_magnitude) as i64 - 1;
        let mut sub_bucket =
            (index & (self.sub_bucket_half_count - 1)) + self.sub_bucket_half_count;
        if bucket < 0 {
            sub_bucket -= self.sub_bucket_half_count;
            bucket = 0;
        }
        let shift = bucket as u32 + self.unit_magnitude;
        let lowest = sub_bucket << shift;
        lowest + (1u64 << shift) - 1
    }
}

fn read_u32(b: &[u8], at: usize) -> Result<u32, DecodeError> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes(s.try_into().expect("4 bytes")))
        .ok_or(DecodeError::HeaderTruncated)
}

fn read_u64(b: &[u8], at: usize) -> Result<u64, DecodeError> {
    b.get(at..at + 8)
        .map(|s| u64::from_be_bytes(s.try_into().expect("8 bytes")))
        .ok_or(DecodeError::HeaderTruncated)
}

/// LEB128 with at most 9 bytes, the ninth contributing all its 8 bits (HdrHistogram's varint).
#[inline]
fn read_varint(b: &[u8]) -> Result<(u64, usize), DecodeError> {
    // Most counts and gaps fit one byte.
    if let Some(&byte) = b.first()
        && byte & 0x80 == 0
    {
        return Ok((u64::from(byte), 1));
    }
    let mut value = 0u64;
    for i in 0..9 {
        let byte = *b.get(i).ok_or(DecodeError::VarintTruncated)?;
        if i == 8 {
            return Ok((value | (u64::from(byte) << 56), 9));
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    unreachable!("the loop returns by the ninth byte")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An uncompressed V2 payload: 3 significant digits, lowest value 1, and `body` as counts.
    fn payload(digits: u32, body: &[u8]) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&V2_COOKIE.to_be_bytes());
        p.extend_from_slice(&(body.len() as u32).to_be_bytes());
        p.extend_from_slice(&0u32.to_be_bytes()); // normalizing offset
        p.extend_from_slice(&digits.to_be_bytes());
        p.extend_from_slice(&1u64.to_be_bytes()); // lowest
        p.extend_from_slice(&3_600_000_000_000u64.to_be_bytes()); // highest
        p.extend_from_slice(&1f64.to_bits().to_be_bytes()); // integer-to-double ratio
        assert_eq!(p.len(), V2_HEADER_BYTES);
        p.extend_from_slice(body);
        p
    }

    /// Hand-made payloads decode to the pairs they spell, and each kind of damage is named.
    #[test]
    fn decodes_known_bytes_and_names_each_damage() {
        let mut d = PayloadDecoder::default();
        let mut out = Vec::new();
        // ZigZag: 9 is -5 (skip slots 0-4), 4 is a count of 2 at slot 5, 2 a count of 1 at 6.
        // Below 2048 a slot of a 3-digit histogram with lowest 1 holds exactly its index.
        assert_eq!(d.decode(&payload(3, &[9, 4, 2]), &mut out).unwrap(), 3);
        assert_eq!(out, [(5, 2), (6, 1)]);

        let mut err = |bytes: &[u8]| d.decode(bytes, &mut Vec::new()).unwrap_err();
        assert!(matches!(err(&[0x1c, 0x84]), DecodeError::HeaderTruncated));
        assert!(matches!(err(&[0; 8]), DecodeError::UnknownCookie(0)));
        assert!(matches!(
            err(&payload(0, &[2])),
            DecodeError::Parameters {
                digits: 0,
                lowest: 1
            }
        ));
        assert!(matches!(
            err(&payload(3, &[0x80])),
            DecodeError::VarintTruncated
        ));
        let mut short = payload(3, &[9, 4]);
        short[4..8].copy_from_slice(&3u32.to_be_bytes());
        assert!(matches!(err(&short), DecodeError::PayloadTruncated));
        let mut compressed = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        compressed.extend_from_slice(&100u32.to_be_bytes());
        compressed.extend_from_slice(&[0x78, 0x9c]);
        assert!(matches!(err(&compressed), DecodeError::CompressedTruncated));
        assert_eq!(
            err(&[0; 8]).to_string(),
            "unknown histogram cookie 0x0",
            "the message the scanner passes on"
        );
    }

    /// A zlib stream that inflates past [`MAX_PAYLOAD_BYTES`] (a 16 KiB line of zeros
    /// inflating to 17 MiB: before, inflated without bound, a 32 MiB line to 32 GB) is
    /// refused once the cap is reached, the buffer never past it.
    #[test]
    fn a_payload_that_inflates_past_the_cap_is_refused() {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&payload(3, &vec![0u8; MAX_PAYLOAD_BYTES + (1 << 20)]))
            .unwrap();
        let zlib = z.finish().unwrap();
        assert!(zlib.len() < 64 << 10, "{}", zlib.len());
        let mut encoded = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        encoded.extend_from_slice(&(zlib.len() as u32).to_be_bytes());
        encoded.extend_from_slice(&zlib);
        let mut decoder = PayloadDecoder::default();
        let e = decoder.decode(&encoded, &mut Vec::new()).unwrap_err();
        assert!(matches!(e, DecodeError::TooLarge), "{e}");
        assert!(e.to_string().contains("16 MiB"), "{e}");
        assert!(decoder.inflated.capacity() <= MAX_PAYLOAD_BYTES + 4096);
    }
}
