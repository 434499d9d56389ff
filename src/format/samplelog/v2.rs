//! Format 2 of the sample log: checksummed blocks of delta-coded records
//! (docs/result-format.md, "samples.bin, format 2").
//!
//! A block is self-contained: the prediction state starts empty in each one, so a reader needs
//! nothing from earlier blocks, and a block torn by a kill cannot spoil those before it. Within a
//! block, each CPU's records are predicted from that CPU's previous record: the next wakeup is
//! one period later (plus the periods missed), so on an absolute grid the common record is a tag
//! byte saying "as predicted" and the latency as a zigzag varint.

use super::{Read1, SampleRecord, read_up_to};
use crate::format::samples::{
    BLOCK_HEADER_BYTES, BLOCK_PAYLOAD_BYTES, HEADER_BYTES, MAX_BLOCK_PAYLOAD_BYTES, TAG_CPU,
    TAG_DUE_OFF_GRID, TAG_IRQ, TAG_KNOWN, TAG_MISSED, TAG_SEQ_GAP,
};
use std::io::{self, Read};

/// The most bytes one record can take: the tag, then a u32 CPU (5 bytes as a varint), the seq
/// gap, the due time's offset (10 each), missed (5), IRQ latency and latency (10 each).
pub(super) const MAX_ENCODED_RECORD_BYTES: usize = 1 + 5 + 10 + 10 + 5 + 10 + 10;

/// What a CPU's previous record in the block predicts about its next one.
#[derive(Debug, Clone, Copy)]
struct CpuState {
    cpu: u32,
    seq: u64,
    expected_ns: u64,
    missed: u32,
    /// The last step between two consecutive wakeups (seq + 1, nothing missed): the period.
    /// Zero until the block has seen one.
    period_ns: u64,
}

impl CpuState {
    /// Periods from this record to a record with `seq`: one per wakeup, plus the ones this
    /// record missed (the measuring loop skips them). Wraps, like every step of the predictor,
    /// so that any record round-trips, not only the ones a run makes.
    fn periods_to(&self, seq: u64) -> u64 {
        seq.wrapping_sub(self.seq)
            .wrapping_add(u64::from(self.missed))
    }

    fn predicted_due(&self, seq: u64) -> u64 {
        self.expected_ns
            .wrapping_add(self.period_ns.wrapping_mul(self.periods_to(seq)))
    }

    fn advance(&mut self, r: &SampleRecord) {
        if self.periods_to(r.seq) == 1 {
            self.period_ns = r.expected_ns.wrapping_sub(self.expected_ns);
        }
        self.seq = r.seq;
        self.expected_ns = r.expected_ns;
        self.missed = r.missed;
    }
}

/// The prediction state of one block: the last record of each CPU seen in it, and the CPU of
/// the block's last record. The encoder and the decoder keep identical copies.
#[derive(Debug, Default)]
struct Predictor {
    cpus: Vec<CpuState>,
    last_cpu: Option<u32>,
}

impl Predictor {
    fn state(&self, cpu: u32) -> Option<&CpuState> {
        self.cpus.iter().find(|s| s.cpu == cpu)
    }

    /// The seq expected of the next record of `cpu`: the next wakeup. The first record of a
    /// CPU in a block is predicted as seq 0 due at 0, so it carries its values in full.
    fn next_seq(&self, cpu: u32) -> u64 {
        self.state(cpu).map_or(0, |s| s.seq.wrapping_add(1))
    }

    /// The due time expected of the record of `cpu` with `seq`.
    fn due_for(&self, cpu: u32, seq: u64) -> u64 {
        self.state(cpu).map_or(0, |s| s.predicted_due(seq))
    }

    fn advance(&mut self, r: &SampleRecord) {
        self.last_cpu = Some(r.cpu);
        match self.cpus.iter_mut().find(|s| s.cpu == r.cpu) {
            Some(s) => s.advance(r),
            None => self.cpus.push(CpuState {
                cpu: r.cpu,
                seq: r.seq,
                expected_ns: r.expected_ns,
                missed: r.missed,
                period_ns: 0,
            }),
        }
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Builds one block at a time in a buffer allocated once.
pub(super) struct BlockEncoder {
    /// The block: its header (filled in by [`BlockEncoder::finish`]), then the payload.
    block: Vec<u8>,
    records: u32,
    predictor: Predictor,
}

impl BlockEncoder {
    pub(super) fn new() -> Self {
        let mut block = Vec::with_capacity(BLOCK_HEADER_BYTES + BLOCK_PAYLOAD_BYTES);
        block.resize(BLOCK_HEADER_BYTES, 0);
        BlockEncoder {
            block,
            records: 0,
            predictor: Predictor::default(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Whether the next record might not fit in the block's payload limit.
    pub(super) fn is_full(&self) -> bool {
        self.block.len() - BLOCK_HEADER_BYTES + MAX_ENCODED_RECORD_BYTES > BLOCK_PAYLOAD_BYTES
    }

    pub(super) fn push(&mut self, r: &SampleRecord) {
        let tag_at = self.block.len();
        self.block.push(0);
        let mut tag = 0;
        let seq = self.predictor.next_seq(r.cpu);
        let out = &mut self.block;
        if self.predictor.last_cpu != Some(r.cpu) {
            tag |= TAG_CPU;
            put_varint(out, u64::from(r.cpu));
        }
        if r.seq != seq {
            tag |= TAG_SEQ_GAP;
            put_varint(out, zigzag(r.seq.wrapping_sub(seq) as i64));
        }
        let due = self.predictor.due_for(r.cpu, r.seq);
        if r.expected_ns != due {
            tag |= TAG_DUE_OFF_GRID;
            put_varint(out, zigzag(r.expected_ns.wrapping_sub(due) as i64));
        }
        if r.missed != 0 {
            tag |= TAG_MISSED;
            put_varint(out, u64::from(r.missed));
        }
        if let Some(irq) = r.irq_latency_ns {
            tag |= TAG_IRQ;
            put_varint(out, zigzag(irq));
        }
        put_varint(out, zigzag(r.latency_ns));
        self.block[tag_at] = tag;
        self.records += 1;
        self.predictor.advance(r);
    }

    /// The finished block, header and payload, to be written with one write; the encoder starts
    /// an empty block once the caller calls [`BlockEncoder::clear`].
    pub(super) fn finish(&mut self) -> &[u8] {
        let payload = (self.block.len() - BLOCK_HEADER_BYTES) as u32;
        self.block[0..4].copy_from_slice(&payload.to_le_bytes());
        self.block[4..8].copy_from_slice(&self.records.to_le_bytes());
        let crc = block_crc(&self.block[0..8], &self.block[BLOCK_HEADER_BYTES..]);
        self.block[8..12].copy_from_slice(&crc.to_le_bytes());
        &self.block
    }

    pub(super) fn clear(&mut self) {
        self.block.truncate(BLOCK_HEADER_BYTES);
        self.records = 0;
        self.predictor = Predictor::default();
    }
}

/// The checksum of a block: CRC-32 (IEEE, as zlib and gzip) over its size and count, then its
/// payload.
pub(super) fn block_crc(size_and_count: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(size_and_count);
    h.update(payload);
    h.finalize()
}

/// Decodes the records of one block's payload (checksum already verified).
#[derive(Default)]
pub(super) struct BlockDecoder {
    pos: usize,
    predictor: Predictor,
}

impl BlockDecoder {
    /// The next record of `payload`; an error names what is malformed.
    pub(super) fn next(&mut self, payload: &[u8]) -> Result<SampleRecord, String> {
        let Some(&tag) = payload.get(self.pos) else {
            return Err("the block ends where a record should start".into());
        };
        self.pos += 1;
        if tag & !TAG_KNOWN != 0 {
            return Err(format!("unknown tag bits {tag:#04x}"));
        }
        let mut varint = || -> Result<u64, String> {
            let mut v = 0u64;
            for shift in (0..64).step_by(7) {
                let Some(&b) = payload.get(self.pos) else {
                    return Err("a record runs past the end of its block".into());
                };
                self.pos += 1;
                if shift == 63 && b > 1 {
                    return Err("a varint overflows 64 bits".into());
                }
                v |= u64::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    return Ok(v);
                }
            }
            Err("a varint is longer than 10 bytes".into())
        };
        let has = |bit: u8| tag & bit != 0;
        let cpu = match (has(TAG_CPU), self.predictor.last_cpu) {
            (true, _) => u32::try_from(varint()?).map_err(|_| "a CPU number above 2^32")?,
            (false, Some(cpu)) => cpu,
            (false, None) => return Err("the first record of a block has no CPU".into()),
        };
        let mut seq = self.predictor.next_seq(cpu);
        if has(TAG_SEQ_GAP) {
            seq = seq.wrapping_add(unzigzag(varint()?) as u64);
        }
        let mut expected_ns = self.predictor.due_for(cpu, seq);
        if has(TAG_DUE_OFF_GRID) {
            expected_ns = expected_ns.wrapping_add(unzigzag(varint()?) as u64);
        }
        let missed = match has(TAG_MISSED) {
            true => u32::try_from(varint()?).map_err(|_| "missed periods above 2^32")?,
            false => 0,
        };
        let irq_latency_ns = match has(TAG_IRQ) {
            true => Some(unzigzag(varint()?)),
            false => None,
        };
        let latency_ns = unzigzag(varint()?);
        let r = SampleRecord {
            cpu,
            missed,
            seq,
            expected_ns,
            latency_ns,
            irq_latency_ns,
        };
        self.predictor.advance(&r);
        Ok(r)
    }

    /// Whether the payload has been read to its last byte.
    pub(super) fn at_end(&self, payload: &[u8]) -> bool {
        self.pos == payload.len()
    }
}

/// Reads a format-2 file block by block: a block is checked whole (size, checksum) before any
/// of its records is handed out, and must hold exactly the records its header counts.
pub(super) struct BlockReader {
    payload: Vec<u8>,
    /// Records of the current block not yet decoded.
    left: u32,
    decoder: BlockDecoder,
    /// The file offset of the current block (while `left > 0`), else of the next.
    offset: u64,
    next_offset: u64,
}

impl Default for BlockReader {
    fn default() -> Self {
        BlockReader {
            payload: Vec::new(),
            left: 0,
            decoder: BlockDecoder::default(),
            offset: HEADER_BYTES as u64,
            next_offset: HEADER_BYTES as u64,
        }
    }
}

impl BlockReader {
    pub(super) fn next(&mut self, input: &mut impl Read) -> io::Result<Read1> {
        if self.left == 0 {
            if !self.decoder.at_end(&self.payload) {
                let what = "a block with bytes after its last record".to_string();
                return Ok(self.damaged(what));
            }
            self.offset = self.next_offset;
            if let Some(damage) = self.load_block(input)? {
                return Ok(damage);
            }
            if self.left == 0 {
                return Ok(Read1::End);
            }
        }
        match self.decoder.next(&self.payload) {
            Ok(r) => {
                self.left -= 1;
                Ok(Read1::Record(r))
            }
            Err(e) => Ok(self.damaged(format!("a malformed block ({e})"))),
        }
    }

    fn damaged(&self, what: String) -> Read1 {
        Read1::Damaged {
            what,
            at: self.offset,
        }
    }

    /// Reads and checks the next block. Leaves `left` at 0 at the end of the file; returns the
    /// damage found instead of a whole, intact block.
    fn load_block(&mut self, input: &mut impl Read) -> io::Result<Option<Read1>> {
        let mut header = [0u8; BLOCK_HEADER_BYTES];
        let n = read_up_to(input, &mut header)?;
        if n == 0 {
            return Ok(None);
        }
        if n < BLOCK_HEADER_BYTES {
            let what = format!("a torn last block ({n} of its {BLOCK_HEADER_BYTES}-byte header)");
            return Ok(Some(self.damaged(what)));
        }
        let size = u32::from_le_bytes(header[0..4].try_into().unwrap()) as usize;
        let count = u32::from_le_bytes(header[4..8].try_into().unwrap());
        let crc = u32::from_le_bytes(header[8..12].try_into().unwrap());
        if size > MAX_BLOCK_PAYLOAD_BYTES {
            let what =
                format!("a block header claiming {size} bytes (at most {MAX_BLOCK_PAYLOAD_BYTES})");
            return Ok(Some(self.damaged(what)));
        }
        self.payload.resize(size, 0);
        let got = read_up_to(input, &mut self.payload)?;
        if got < size {
            let what = format!("a torn last block ({got} of its {size} payload bytes)");
            return Ok(Some(self.damaged(what)));
        }
        if block_crc(&header[0..8], &self.payload) != crc {
            let what = "a block whose checksum does not match".to_string();
            return Ok(Some(self.damaged(what)));
        }
        if count == 0 || size < 2 * count as usize {
            // Every record takes at least a tag and a latency byte; the writer writes no empty
            // block.
            let what = format!("a block of {size} bytes claiming {count} records");
            return Ok(Some(self.damaged(what)));
        }
        self.left = count;
        self.decoder = BlockDecoder::default();
        self.next_offset = self.offset + (BLOCK_HEADER_BYTES + size) as u64;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(records: &[SampleRecord]) -> Vec<u8> {
        let mut enc = BlockEncoder::new();
        records.iter().for_each(|r| enc.push(r));
        let block = enc.finish().to_vec();
        let payload = &block[BLOCK_HEADER_BYTES..];
        let mut dec = BlockDecoder::default();
        for r in records {
            assert_eq!(&dec.next(payload).unwrap(), r);
        }
        assert!(dec.at_end(payload));
        block
    }

    fn on_grid(cpu: u32, seq: u64, latency_ns: i64) -> SampleRecord {
        SampleRecord {
            cpu,
            missed: 0,
            seq,
            expected_ns: 5_000_000_000 + seq * 100_000,
            latency_ns,
            irq_latency_ns: None,
        }
    }

    /// On an absolute grid a record is its tag byte and its latency: 1 + 2 bytes for latencies
    /// of 64 ns to 8 us, 1 + 3 up to 1 ms.
    #[test]
    fn a_record_on_the_grid_is_its_tag_and_its_latency() {
        let records: Vec<_> = (0..1000).map(|k| on_grid(3, k, 5_000)).collect();
        let block = round_trip(&records);
        let first = 1 + 1 + 5 + 2; // tag, cpu, due in full (5e9 ns: 5 bytes), latency
        let second = 1 + 3 + 2; // tag, the period learnt as an off-grid due time, latency
        assert_eq!(block.len(), BLOCK_HEADER_BYTES + first + second + 998 * 3);
    }

    /// Missed periods move the next due time by as many periods; dropped records (seq gaps) and
    /// another CPU's records between them do not disturb a CPU's prediction.
    #[test]
    fn missed_periods_gaps_and_interleaving_round_trip_exactly() {
        let mut records = vec![];
        for k in 0..50u64 {
            for cpu in [0, 7] {
                let mut r = on_grid(cpu, k, (k * 37) as i64 - 100);
                if k == 10 {
                    r.missed = 2;
                    r.latency_ns = 250_000;
                }
                if k > 10 {
                    // Periods 11 and 12 passed unserved: the grid moved on by two.
                    r.seq -= 2;
                }
                if k % 9 == 0 {
                    r.irq_latency_ns = Some(-(k as i64) * 1000);
                }
                records.push(r);
            }
        }
        records.retain(|r| !(r.cpu == 7 && (20..23).contains(&r.seq)));
        round_trip(&records);
    }

    /// Any record round-trips, not only what a run makes: the predictor wraps.
    #[test]
    fn extreme_values_round_trip() {
        let extreme = |cpu, seq, expected_ns, latency_ns, irq| SampleRecord {
            cpu,
            missed: u32::MAX,
            seq,
            expected_ns,
            latency_ns,
            irq_latency_ns: irq,
        };
        round_trip(&[
            extreme(u32::MAX, u64::MAX, u64::MAX, i64::MIN, Some(i64::MAX)),
            extreme(u32::MAX, 0, 0, i64::MAX, Some(i64::MIN)),
            extreme(0, u64::MAX / 2, 1, 0, None),
            extreme(u32::MAX, 3, u64::MAX - 7, -1, Some(0)),
            extreme(0, 0, u64::MAX, 1, None),
        ]);
    }

    #[test]
    fn malformed_payloads_are_named() {
        let mut dec = BlockDecoder::default();
        assert!(dec.next(&[0x20, 0]).unwrap_err().contains("unknown tag"));
        let mut dec = BlockDecoder::default();
        assert!(dec.next(&[0, 0]).unwrap_err().contains("no CPU"));
        let mut dec = BlockDecoder::default();
        assert!(
            dec.next(&[TAG_CPU, 0x80])
                .unwrap_err()
                .contains("past the end")
        );
        let mut dec = BlockDecoder::default();
        let long = [
            TAG_CPU, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ];
        assert!(dec.next(&long).unwrap_err().contains("overflows"));
    }
}
