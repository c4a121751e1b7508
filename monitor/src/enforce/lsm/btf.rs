//! The argument count of an LSM hook, read from the kernel's BTF: a few
//! hooks changed their arguments between the kernels abm supports
//! (`inode_setattr` gained a first `idmap` argument), and a BPF LSM
//! program reads them by position.
use std::path::Path;

/// BTF kinds (include/uapi/linux/btf.h) whose records are followed by
/// data of their own; the size of that data.
fn extra_len(kind: u32, vlen: usize) -> Option<usize> {
    Some(match kind {
        1 => 4,             // INT
        2 => 0,             // PTR
        3 => 12,            // ARRAY
        4 | 5 => 12 * vlen, // STRUCT, UNION
        6 => 8 * vlen,      // ENUM
        7..=12 => 0,        // FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC
        13 => 8 * vlen,     // FUNC_PROTO
        14 => 4,            // VAR
        15 => 12 * vlen,    // DATASEC
        16 => 0,            // FLOAT
        17 => 4,            // DECL_TAG
        18 => 0,            // TYPE_TAG
        19 => 12 * vlen,    // ENUM64
        _ => return None,
    })
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Number of parameters of the kernel function `func` in the BTF blob
/// `btf` (`None` when it has no such function).
pub fn func_params(btf: &[u8], func: &str) -> Result<Option<usize>, BtfError> {
    let bad = || BtfError::Malformed;
    if btf.len() < 24 || u16::from_le_bytes([btf[0], btf[1]]) != 0xeb9f {
        return Err(BtfError::NotBtf);
    }
    let hdr = u32_at(btf, 4).ok_or_else(bad)? as usize;
    let (type_off, type_len) = (
        u32_at(btf, 8).ok_or_else(bad)?,
        u32_at(btf, 12).ok_or_else(bad)?,
    );
    let str_off = u32_at(btf, 16).ok_or_else(bad)? as usize;
    let types = btf
        .get(hdr + type_off as usize..hdr + type_off as usize + type_len as usize)
        .ok_or_else(bad)?;
    let strings = btf.get(hdr + str_off..).ok_or_else(bad)?;
    let name_at = |off: usize| -> &[u8] {
        let s = strings.get(off..).unwrap_or_default();
        &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
    };
    // (offset of each type record), ids from 1.
    let mut offsets = vec![0usize];
    let mut at = 0usize;
    let mut func_type = None;
    while at + 12 <= types.len() {
        let name = u32_at(types, at).ok_or_else(bad)? as usize;
        let info = u32_at(types, at + 4).ok_or_else(bad)?;
        let kind = (info >> 24) & 0x1f;
        let vlen = (info & 0xffff) as usize;
        offsets.push(at);
        if kind == 12 && func_type.is_none() && name_at(name) == func.as_bytes() {
            func_type = Some(u32_at(types, at + 8).ok_or_else(bad)? as usize);
        }
        at += 12 + extra_len(kind, vlen).ok_or(BtfError::UnknownKind(kind))?;
    }
    let Some(proto) = func_type else {
        return Ok(None);
    };
    let off = *offsets.get(proto).ok_or_else(bad)?;
    let info = u32_at(types, off + 4).ok_or_else(bad)?;
    if (info >> 24) & 0x1f != 13 {
        return Err(BtfError::NotPrototype(func.to_owned()));
    }
    Ok(Some((info & 0xffff) as usize))
}

/// Number of arguments of LSM hook `hook` on the running kernel (its BPF
/// attach point `bpf_lsm_<hook>` in /sys/kernel/btf/vmlinux).
pub fn hook_args(hook: &str) -> Result<usize, BtfError> {
    let path = Path::new("/sys/kernel/btf/vmlinux");
    let btf = std::fs::read(path).map_err(|source| BtfError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    func_params(&btf, &format!("bpf_lsm_{hook}"))?.ok_or_else(|| BtfError::NoHook(hook.to_owned()))
}

/// Why the kernel BTF does not tell a hook's arguments.
#[derive(Debug, thiserror::Error)]
pub enum BtfError {
    #[error("reading {}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("not a little-endian BTF blob")]
    NotBtf,
    #[error("malformed BTF")]
    Malformed,
    #[error("unknown BTF kind {0}")]
    UnknownKind(u32),
    #[error("{0}'s BTF type is not a function prototype")]
    NotPrototype(String),
    #[error("the kernel BTF has no LSM hook {0} (bpf_lsm_{0})")]
    NoHook(String),
}
