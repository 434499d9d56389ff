//! HdrHistogram's V2 histogram encoding, decoded into the (value, count) pairs it holds: the
//! payload header, the zlib-compressed variant, ZigZag LEB128 counts with runs of empty slots,
//! and the bucket layout that turns a slot index into its value.

const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// cookie, payload length, normalizing offset, significant digits, lowest, highest, ratio.
const V2_HEADER_BYTES: usize = 40;

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
    ) -> Result<u64, String> {
        let cookie = read_u32(encoded, 0)?;
        let payload: &[u8] = match cookie {
            V2_COOKIE => encoded,
            V2_COMPRESSED_COOKIE => {
                let len = read_u32(encoded, 4)? as usize;
                let zlib = encoded
                    .get(8..8 + len)
                    .ok_or("compressed payload shorter than its length")?;
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
                        .map_err(|e| format!("zlib: {e}"))?;
                    match status {
                        flate2::Status::StreamEnd => break,
                        _ if self.inflated.len() == self.inflated.capacity() => {
                            self.inflated.reserve(self.inflated.capacity());
                        }
                        _ if inflater.total_in() as usize == zlib.len() => {
                            return Err("truncated zlib stream".into());
                        }
                        _ => {}
                    }
                }
                &self.inflated
            }
            _ => return Err(format!("unknown histogram cookie {cookie:#x}")),
        };
        if read_u32(payload, 0)? != V2_COOKIE {
            return Err("not a V2 histogram".into());
        }
        let counts_len = read_u32(payload, 4)? as usize;
        if read_u32(payload, 8)? != 0 {
            return Err("normalizing index offsets are not supported".into());
        }
        let digits = read_u32(payload, 12)?;
        let lowest = read_u64(payload, 16)?;
        let layout = BucketLayout::new(digits, lowest)?;
        let mut body = payload
            .get(V2_HEADER_BYTES..V2_HEADER_BYTES + counts_len)
            .ok_or("payload shorter than its length")?;
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
    fn new(digits: u32, lowest: u64) -> Result<Self, String> {
        if !(1..=5).contains(&digits) || lowest == 0 {
            return Err(format!(
                "unsupported histogram parameters ({digits} digits, lowest {lowest})"
            ));
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

fn read_u32(b: &[u8], at: usize) -> Result<u32, String> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes(s.try_into().expect("4 bytes")))
        .ok_or_else(|| "histogram header truncated".into())
}

fn read_u64(b: &[u8], at: usize) -> Result<u64, String> {
    b.get(at..at + 8)
        .map(|s| u64::from_be_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| "histogram header truncated".into())
}

/// LEB128 with at most 9 bytes, the ninth contributing all its 8 bits (HdrHistogram's varint).
#[inline]
fn read_varint(b: &[u8]) -> Result<(u64, usize), String> {
    // Most counts and gaps fit one byte.
    if let Some(&byte) = b.first()
        && byte & 0x80 == 0
    {
        return Ok((u64::from(byte), 1));
    }
    let mut value = 0u64;
    for i in 0..9 {
        let byte = *b.get(i).ok_or("varint truncated")?;
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
