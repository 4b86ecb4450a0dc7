//! The `qnn_compile_spec` compile spec: a `QnnExecuTorchOptions`
//! flatbuffer (`qc_compiler_spec.fbs`), read field by field with every
//! offset checked against the spec's bytes, into `compile_specs.json`.

use serde_json::{Map, Value, json};

use crate::format::le::{i32_at, slice, u8_at, u16_at, u32_at};

/// A table of the flatbuffer: its position and its vtable's.
#[derive(Clone, Copy)]
struct Table<'b> {
    b: &'b [u8],
    pos: u64,
    vtable: u64,
    vlen: u16,
}

impl<'b> Table<'b> {
    fn at(b: &'b [u8], pos: u64) -> Option<Self> {
        let soffset = i64::from(i32_at(b, pos)?);
        let vtable = u64::try_from(i64::try_from(pos).ok()?.checked_sub(soffset)?).ok()?;
        let vlen = u16_at(b, vtable)?;
        Some(Table {
            b,
            pos,
            vtable,
            vlen,
        })
    }

    /// The position of field `i`, when it is present.
    fn field(&self, i: u64) -> Option<u64> {
        let slot = 4 + 2 * i;
        if slot + 2 > u64::from(self.vlen) {
            return None;
        }
        let off = u16_at(self.b, self.vtable + slot)?;
        (off != 0).then(|| self.pos + u64::from(off))
    }

    fn int(&self, i: u64) -> Option<i32> {
        self.field(i).map_or(Some(0), |p| i32_at(self.b, p))
    }

    fn uint(&self, i: u64) -> Option<u32> {
        self.field(i).map_or(Some(0), |p| u32_at(self.b, p))
    }

    fn bool(&self, i: u64) -> Option<bool> {
        self.field(i)
            .map_or(Some(false), |p| u8_at(self.b, p).map(|v| v != 0))
    }

    fn indirect(&self, i: u64) -> Option<Option<u64>> {
        let Some(p) = self.field(i) else {
            return Some(None);
        };
        Some(Some(p.checked_add(u64::from(u32_at(self.b, p)?))?))
    }

    fn table(&self, i: u64) -> Option<Option<Table<'b>>> {
        match self.indirect(i)? {
            None => Some(None),
            Some(p) => Table::at(self.b, p).map(Some),
        }
    }

    fn string(&self, i: u64) -> Option<Value> {
        match self.indirect(i)? {
            None => Some(Value::Null),
            Some(p) => {
                let len = u64::from(u32_at(self.b, p)?);
                let s = slice(self.b, p + 4, len)?;
                Some(json!(String::from_utf8_lossy(s)))
            }
        }
    }
}

fn named(names: &[(i32, &str)], v: i32) -> Value {
    names
        .iter()
        .find(|(n, _)| *n == v)
        .map_or_else(|| json!(v), |(_, s)| json!(s))
}

const CHIPSETS: &[(i32, &str)] = &[
    (0, "UNKNOWN_SM"),
    (39, "SA8295"),
    (72, "SA8797"),
    (30, "SM8350"),
    (36, "SM8450"),
    (42, "SM8475"),
    (43, "SM8550"),
    (57, "SM8650"),
    (69, "SM8750"),
    (87, "SM8850"),
    (46, "SSG2115P"),
    (58, "SSG2125P"),
    (45, "SXR1230P"),
    (53, "SXR2230P"),
    (75, "SXR2330P"),
    (77, "QCS9100"),
    (95, "SAR2230P"),
    (52, "SA8255"),
    (96, "SW6100"),
    (93, "QCM6490"),
    (97, "SM8845"),
];

fn seq(names: &'static [&'static str]) -> impl Fn(i32) -> Value {
    move |v| {
        usize::try_from(v)
            .ok()
            .and_then(|i| names.get(i))
            .map_or_else(|| json!(v), |s| json!(s))
    }
}

fn soc(t: Table<'_>) -> Option<Value> {
    let mut o = Map::new();
    o.insert("soc_model".into(), named(CHIPSETS, t.int(0)?));
    if let Some(h) = t.table(1)? {
        let arch = h.int(0)?;
        o.insert(
            "htp_info".into(),
            json!({
                "htp_arch": if arch == 0 { json!("NONE") } else { json!(format!("V{arch}")) },
                "vtcm_size_in_mb": h.uint(1)?,
            }),
        );
    }
    if let Some(l) = t.table(2)? {
        let v = l.int(0)?;
        o.insert(
            "lpai_info".into(),
            json!({"lpai_hardware_version": if v == 0 { json!("NONE") } else { json!(format!("V{v}")) }}),
        );
    }
    Some(Value::Object(o))
}

fn backend(t: Table<'_>) -> Option<Value> {
    let kind = seq(&[
        "kUndefinedBackend",
        "kGpuBackend",
        "kHtpBackend",
        "kDspBackend",
        "kLpaiBackend",
    ]);
    let mut o = Map::new();
    o.insert("backend_type".into(), kind(t.int(0)?));
    if let Some(h) = t.table(1)? {
        let perf = seq(&[
            "kHtpDefault",
            "kHtpSustainedHighPerformance",
            "kHtpBurst",
            "kHtpHighPerformance",
            "kHtpPowerSaver",
            "kHtpLowPowerSaver",
            "kHtpHighPowerSaver",
            "kHtpLowBalanced",
            "kHtpBalanced",
        ]);
        o.insert(
            "htp_options".into(),
            json!({
                "max_sf_buf_size": h.int(0)?,
                "performance_mode": perf(h.int(1)?),
                "precision": seq(&["kHtpQuantized", "kHtpFp16"])(h.int(2)?),
                "pd_session": seq(&["kHtpUnsignedPd", "kHtpSignedPd"])(h.int(3)?),
                "use_conv_hmx": h.bool(4)?,
                "use_dlbc": h.bool(5)?,
                "use_fold_relu": h.bool(6)?,
                "use_multi_contexts": h.bool(7)?,
                "use_weight_sharing": h.bool(8)?,
                "use_slc_allocator": h.bool(9)?,
            }),
        );
    }
    if let Some(g) = t.table(2)? {
        o.insert(
            "gpu_options".into(),
            json!({
                "performance_mode": seq(&["kGpuPerfHintHigh", "kGpuPerfHintNormal", "kGpuPerfHintLow"])(g.int(0)?),
                "precision": seq(&["kGpuPrecisionFp32", "kGpuPrecisionFp16", "kGpuPrecisionHybrid", "kGpuPrecisionUserProvided"])(g.int(1)?),
                "use_memory_optimizations": g.bool(2)?,
                "use_node_optimizations": g.bool(3)?,
                "use_queue_recording": g.bool(4)?,
                "use_weight_sharing": g.bool(5)?,
            }),
        );
    }
    if let Some(l) = t.table(3)? {
        o.insert(
            "lpai_options".into(),
            json!({
                "fps": l.int(0)?,
                "ftrt_ratio": l.int(1)?,
                "client_perf_type": seq(&["kUndefined", "kRealTime", "kNonRealTime"])(l.int(2)?),
                "affinity": seq(&["kUndefined", "kSoft", "kHard"])(l.int(3)?),
                "core_selection": l.uint(4)?,
                "target_env": seq(&["kX86", "kArm", "kAdsp"])(l.int(5)?),
            }),
        );
    }
    Some(Value::Object(o))
}

fn op_packages(t: Table<'_>) -> Option<Value> {
    let Some(v) = t.indirect(0)? else {
        return Some(json!([]));
    };
    let n = u64::from(u32_at(t.b, v)?);
    if n.checked_mul(4)? > t.b.len() as u64 {
        return None;
    }
    let mut out = Vec::new();
    for i in 0..n {
        let at = v + 4 + 4 * i;
        let p = Table::at(t.b, at.checked_add(u64::from(u32_at(t.b, at)?))?)?;
        out.push(json!({
            "op_package_name": p.string(0)?,
            "op_package_path": p.string(1)?,
            "interface_provider": p.string(2)?,
            "target": seq(&["UNKNOWN", "CPU", "HTP"])(p.int(3)?),
            "custom_op_name": p.string(4)?,
            "qnn_op_type_name": p.string(5)?,
            "platform": seq(&["UNKNOWN", "X86_64", "AARCH64_ANDROID"])(p.int(6)?),
        }));
    }
    Some(Value::Array(out))
}

/// The options `spec` holds, or `None` when its bytes do not read as a
/// `QnnExecuTorchOptions` table.
pub fn decode(spec: &[u8]) -> Option<Value> {
    let root = Table::at(spec, u64::from(u32_at(spec, 0)?))?;
    let mut o = Map::new();
    if let Some(s) = root.table(0)? {
        o.insert("soc_info".into(), soc(s)?);
    }
    if let Some(b) = root.table(1)? {
        o.insert("backend_options".into(), backend(b)?);
    }
    o.insert("library_path".into(), root.string(2)?);
    let log = seq(&[
        "kLogOff",
        "kLogLevelError",
        "kLogLevelWarn",
        "kLogLevelInfo",
        "kLogLevelVerbose",
        "kLogLevelDebug",
    ]);
    o.insert("log_level".into(), log(root.int(3)?));
    o.insert("online_prepare".into(), json!(root.bool(4)?));
    o.insert("dump_intermediate_outputs".into(), json!(root.bool(5)?));
    let profile = seq(&[
        "kProfileOff",
        "kProfileBasic",
        "kProfileDetailed",
        "kProfileOptrace",
    ]);
    o.insert("profile_level".into(), profile(root.int(6)?));
    o.insert("shared_buffer".into(), json!(root.bool(7)?));
    o.insert("is_from_context_binary".into(), json!(root.bool(8)?));
    o.insert("saver".into(), json!(root.bool(9)?));
    o.insert("saver_output_dir".into(), root.string(10)?);
    if let Some(p) = root.table(11)? {
        o.insert(
            "op_package_options".into(),
            json!({"op_package_infos": op_packages(p)?}),
        );
    }
    o.insert("use_mha2sha".into(), json!(root.bool(12)?));
    Some(Value::Object(o))
}
