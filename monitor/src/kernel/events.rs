//! Decoding of ring-buffer records (see `monitor_common` for the layout).
//! Pure byte parsing: no kernel needed, fully unit-tested.
use monitor_common::{EventHeader, EventKind, FieldHeader};

/// One decoded payload field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub tag: u8,
    pub flags: u8,
    /// A view of the record's payload (one copy shared by its fields).
    pub data: bytes::Bytes,
}

/// One decoded kernel record.
#[derive(Clone, Debug)]
pub struct KernelEvent {
    pub hdr: EventHeader,
    pub kind: EventKind,
    pub fields: Vec<Field>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("record of {0} bytes is shorter than the {1}-byte header")]
    Short(usize, usize),
    #[error("unknown event kind {0} (kernel programs and daemon built from different sources?)")]
    UnknownKind(u32),
    #[error("payload length {claimed} exceeds the {available} bytes received")]
    PayloadLen { claimed: usize, available: usize },
    #[error("field at payload offset {0} runs past the end of the payload")]
    FieldOverrun(usize),
}

const HDR: usize = std::mem::size_of::<EventHeader>();
/// Room for the fields most records have (a path, its base, the object's
/// identity, a few more), so decoding grows no vector.
const FIELDS_USUAL: usize = 8;
const FHDR: usize = std::mem::size_of::<FieldHeader>();

impl KernelEvent {
    pub fn decode(buf: &[u8]) -> Result<KernelEvent, DecodeError> {
        if buf.len() < HDR {
            return Err(DecodeError::Short(buf.len(), HDR));
        }
        // SAFETY: EventHeader is repr(C), Pod, and the buffer holds HDR bytes.
        let hdr: EventHeader = unsafe { std::ptr::read_unaligned(buf.as_ptr().cast()) };
        let kind = EventKind::from_u32(hdr.kind).ok_or(DecodeError::UnknownKind(hdr.kind))?;
        let payload_len = hdr.payload_len as usize;
        let payload = buf
            .get(HDR..HDR + payload_len)
            .ok_or(DecodeError::PayloadLen {
                claimed: payload_len,
                available: buf.len() - HDR,
            })?;
        // One copy of the payload per record; each field is a view of it.
        let payload = bytes::Bytes::copy_from_slice(payload);
        let mut fields = Vec::with_capacity(FIELDS_USUAL);
        let mut off = 0;
        while off + FHDR <= payload.len() {
            // SAFETY: FieldHeader is 4 plain bytes.
            let fh: FieldHeader =
                unsafe { std::ptr::read_unaligned(payload[off..].as_ptr().cast()) };
            let start = off + FHDR;
            let end = start + fh.len as usize;
            if end > payload.len() {
                return Err(DecodeError::FieldOverrun(off));
            }
            fields.push(Field {
                tag: fh.tag,
                flags: fh.flags,
                data: payload.slice(start..end),
            });
            off = end;
        }
        Ok(KernelEvent { hdr, kind, fields })
    }

    pub fn field(&self, tag: u8) -> Option<&Field> {
        self.fields.iter().find(|f| f.tag == tag)
    }

    pub fn fields(&self, tag: u8) -> impl Iterator<Item = &Field> {
        self.fields.iter().filter(move |f| f.tag == tag)
    }

    pub fn comm(&self) -> String {
        let end = self.hdr.comm.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.hdr.comm[..end]).into_owned()
    }
}

/// Serialises a record the way the kernel programs do (tests and tools).
pub fn encode(hdr: &EventHeader, fields: &[Field]) -> Vec<u8> {
    let mut payload = Vec::new();
    for f in fields {
        let fh = FieldHeader {
            tag: f.tag,
            flags: f.flags,
            len: f.data.len() as u16,
        };
        payload.extend_from_slice(&[fh.tag, fh.flags]);
        payload.extend_from_slice(&fh.len.to_ne_bytes());
        payload.extend_from_slice(&f.data);
    }
    let mut hdr = *hdr;
    hdr.payload_len = payload.len() as u32;
    let mut out = vec![0u8; HDR];
    // SAFETY: writing a repr(C) Pod struct into a buffer of its size.
    unsafe { std::ptr::write_unaligned(out.as_mut_ptr().cast(), hdr) };
    out.extend_from_slice(&payload);
    out
}

pub fn empty_header(kind: EventKind) -> EventHeader {
    EventHeader {
        kind: kind as u32,
        syscall: 0,
        ktime_ns: 0,
        tid: 0,
        pid: 0,
        ppid: 0,
        uid: 0,
        gid: 0,
        payload_len: 0,
        cgroup_id: 0,
        comm: [0; 16],
        result: 0,
        flags: 0,
        mode: u32::MAX,
        owner_uid: u32::MAX,
        owner_gid: u32::MAX,
        fd: 0,
        hflags: 0,
        _pad: 0,
    }
}

#[cfg(test)]
mod tests {
    use monitor_common::field_tag;

    use super::*;

    #[test]
    fn round_trip_preserves_header_and_fields() {
        let mut hdr = empty_header(EventKind::Rename);
        hdr.syscall = 316;
        hdr.pid = 42;
        hdr.tid = 43;
        hdr.comm[..2].copy_from_slice(b"mv");
        hdr.flags = 1;
        let fields = vec![
            Field {
                tag: field_tag::RAW_PATH,
                flags: 0,
                data: b"a".to_vec().into(),
            },
            Field {
                tag: field_tag::BASE,
                flags: 0,
                data: b"x\0tmp\0".to_vec().into(),
            },
            Field {
                tag: field_tag::RAW_PATH2,
                flags: 1,
                data: b"b\xff".to_vec().into(),
            },
        ];
        let ev = KernelEvent::decode(&encode(&hdr, &fields)).unwrap();
        assert_eq!(ev.kind, EventKind::Rename);
        assert_eq!(
            (ev.hdr.pid, ev.hdr.tid, ev.hdr.syscall, ev.hdr.flags),
            (42, 43, 316, 1)
        );
        assert_eq!(ev.comm(), "mv");
        assert_eq!(ev.fields, fields);
        assert_eq!(ev.field(field_tag::RAW_PATH2).unwrap().flags, 1);
    }

    #[test]
    fn rejects_short_unknown_and_overrun_records() {
        assert_eq!(
            KernelEvent::decode(&[0; 10]).unwrap_err(),
            DecodeError::Short(10, HDR)
        );
        let mut hdr = empty_header(EventKind::Unlink);
        hdr.kind = 99;
        assert_eq!(
            KernelEvent::decode(&encode(&hdr, &[])).unwrap_err(),
            DecodeError::UnknownKind(99)
        );
        let hdr = empty_header(EventKind::Unlink);
        let mut bytes = encode(
            &hdr,
            &[Field {
                tag: 1,
                flags: 0,
                data: b"abcdef".to_vec().into(),
            }],
        );
        // Claim a longer field than present.
        bytes[HDR + 2] = 200;
        assert_eq!(
            KernelEvent::decode(&bytes).unwrap_err(),
            DecodeError::FieldOverrun(0)
        );
        let mut hdr = empty_header(EventKind::Unlink);
        hdr.payload_len = 500;
        let mut bytes = vec![0u8; HDR];
        // SAFETY: `bytes` holds at least size_of::<EventHeader>() bytes; unaligned write of a Copy type.
        unsafe { std::ptr::write_unaligned(bytes.as_mut_ptr().cast(), hdr) };
        assert!(matches!(
            KernelEvent::decode(&bytes),
            Err(DecodeError::PayloadLen { .. })
        ));
    }
}
