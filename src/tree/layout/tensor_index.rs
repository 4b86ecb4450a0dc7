//! A method's `tensors/index.json`, rendered when first looked at. What
//! the program says of each tensor is read again from it; what the build
//! decided (file names, where external bytes were found, checkpoint
//! names, aliases) is read from the method's tensor [`Rows`].

use super::index_entry::{IndexEntry, Meaning, Source, TensorShape};
use super::meta::{MethodMeta, byteless_entries};
use crate::format::{MethodInfo, TensorData, TensorInfo};
use crate::tree::table::{RowNames, Rows};

/// The type and shape of `t`.
pub(super) fn shape_of(t: &TensorInfo<'_>) -> TensorShape {
    TensorShape {
        scalar_type: t.scalar_type,
        sizes: t.sizes.clone(),
        dim_order: t.dim_order.clone(),
    }
}

/// The entry of `t` as the program and its method's meaning say it,
/// before the build places its files.
pub(super) fn tensor_entry<'a>(t: &TensorInfo<'a>, meta: &MethodMeta) -> IndexEntry<'a> {
    let mut entry = IndexEntry {
        value_index: Some(t.value_index),
        fqn: Some(t.fqn),
        shape: Some(shape_of(t).describe()),
        nbytes: Some(t.nbytes),
        location: Some(t.data.location()),
        meaning: Meaning {
            users: Some(meta.users_json(t.value_index)).filter(|u| !u.is_empty()),
            training: meta.training.get(&t.value_index).cloned(),
            ..Meaning::default()
        }
        .boxed(),
        ..IndexEntry::default()
    };
    match &t.data {
        TensorData::Constant { buffer_index, .. } => entry.buffer_index = Some(*buffer_index),
        TensorData::MutableInitialState {
            table,
            buffer_index,
            ..
        } => {
            entry.buffer_index = Some(*buffer_index);
            entry.mutable_data_segments_index = Some(*table);
        }
        TensorData::External { key } => entry.key = Some(*key),
    }
    entry.flag_escaped_names();
    entry
}

/// Completes `e`, the entry of the tensor in row `row`, with what the
/// build decided: its files' names, where its bytes are, its alias and
/// checkpoint keys.
fn place<'s>(e: &mut IndexEntry<'s>, rows: &'s Rows, row: u32) {
    let RowNames { bin, npy } = rows.names(row);
    e.name = Some(bin);
    e.npy = Some(npy);
    e.source = Some(Source {
        file: rows.source_file(row),
        offset: rows.bytes(row).1.offset,
    });
    if let Some(names) = rows.checkpoint_names(row) {
        e.meaning().checkpoint_names = Some(names.to_vec());
    }
    if let Some(alias) = rows.alias(row) {
        e.meaning().alias = Some(alias.to_owned());
    }
}

/// The entries of `m`'s `index.json`, made one at a time as they are
/// written: its tensors as `rows` say the build placed them (those without
/// a row are external tensors found nowhere), then the values listed for
/// their recorded names alone.
pub(super) fn entries<'a>(
    m: &'a MethodInfo<'a>,
    meta: &'a MethodMeta,
    rows: &'a Rows,
) -> impl Iterator<Item = IndexEntry<'a>> + 'a {
    let listed: Vec<usize> = m.tensors.iter().map(|t| t.value_index).collect();
    let byteless = byteless_entries(m, meta, &listed);
    m.tensors
        .iter()
        .map(move |t| {
            let mut e = tensor_entry(t, meta);
            match rows.find(t.value_index) {
                Some(row) => place(&mut e, rows, row),
                None => e.missing = Some(true),
            }
            e
        })
        .chain(byteless)
}

/// The largest value index of `m`'s tensors, which sets the width of
/// their file names.
pub(super) fn max_value(m: &MethodInfo<'_>) -> u64 {
    m.tensors.iter().map(|t| t.value_index).max().unwrap_or(0) as u64
}
