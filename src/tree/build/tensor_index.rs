//! A method's `tensors/index.json`, rendered when first looked at. What
//! the program says of each tensor is read again from it; what the build
//! decided (file names, where external bytes were found, checkpoint
//! names, aliases) is kept in a compact [`Placed`] per tensor, a small
//! fraction of the rendered entry's size.

use super::index::{Entry, Meaning, Source, TensorShape};
use super::meta::{MethodMeta, byteless_entries};
use crate::format::{MethodInfo, TensorData, TensorInfo};
use crate::tree::names::{encode, padded};

/// The type and shape of `t`.
pub(super) fn shape_of(t: &TensorInfo<'_>) -> TensorShape {
    TensorShape {
        scalar_type: t.scalar_type,
        sizes: t.sizes.clone(),
        dim_order: t.dim_order.clone(),
    }
}

/// The `.bin` stem of `t` unless its name had to be made unique: value
/// index (padded to `max_value`'s width) and FQN.
pub(super) fn stem(t: &TensorInfo<'_>, max_value: u64) -> String {
    let mut stem = padded(t.value_index as u64, max_value);
    if let Some(fqn) = t.fqn {
        stem = format!("{stem}.{}", encode(fqn));
    }
    stem
}

/// The entry of `t` as the program and its method's meaning say it,
/// before the build places its files.
pub(super) fn tensor_entry<'a>(t: &TensorInfo<'a>, meta: &MethodMeta) -> Entry<'a> {
    let mut entry = Entry {
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
        ..Entry::default()
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

/// What the build decided for one tensor's entry.
#[derive(Debug)]
pub(super) struct Placed {
    /// The `.bin` name when it is not `stem` + `.bin`.
    renamed: Option<Box<str>>,
    /// Whether the `.bin` has a `.npy` twin (same stem).
    npy: bool,
    /// Where the bytes are: the attached data file's name (`None`: this
    /// file) and the offset; `None` for bytes found nowhere.
    source: Option<(Option<Box<str>>, u64)>,
    /// The further name from its first use, if any.
    alias: Option<Box<str>>,
    /// Checkpoint keys (`--names`) whose bytes these are.
    checkpoint_names: Option<Box<[String]>>,
}

impl Placed {
    /// The decisions recorded in `e`, the entry of `t`.
    pub(super) fn of(e: &Entry<'_>, t: &TensorInfo<'_>, max_value: u64) -> Placed {
        let default = format!("{}.bin", stem(t, max_value));
        let meaning = e.meaning.as_deref();
        Placed {
            renamed: e.name.as_deref().filter(|n| *n != default).map(Box::from),
            npy: matches!(e.npy, Some(Some(_))),
            source: e.source.as_ref().map(|s| (s.file.map(Box::from), s.offset)),
            alias: meaning.and_then(|m| m.alias.as_deref()).map(Box::from),
            checkpoint_names: meaning
                .and_then(|m| m.checkpoint_names.clone())
                .map(Vec::into_boxed_slice),
        }
    }

    /// Completes `e`, the entry of `t`, with these decisions.
    fn apply<'s>(&'s self, e: &mut Entry<'s>, t: &TensorInfo<'_>, max_value: u64) {
        let Some((file, offset)) = &self.source else {
            e.missing = Some(true);
            return;
        };
        let stem = match &self.renamed {
            Some(name) => name.trim_end_matches(".bin").to_owned(),
            None => stem(t, max_value),
        };
        e.name = Some(format!("{stem}.bin"));
        e.npy = Some(self.npy.then(|| format!("{stem}.npy")));
        e.source = Some(Source {
            file: file.as_deref(),
            offset: *offset,
        });
        if let Some(names) = &self.checkpoint_names {
            e.meaning().checkpoint_names = Some(names.to_vec());
        }
        if let Some(alias) = &self.alias {
            e.meaning().alias = Some(alias.to_string());
        }
    }
}

/// The entries of `m`'s `index.json`: its tensors as `placed` (one per
/// tensor, in order) says the build placed them, then the values listed
/// for their recorded names alone.
pub(super) fn entries<'a>(
    m: &MethodInfo<'a>,
    meta: &MethodMeta,
    placed: &'a [Placed],
) -> Vec<Entry<'a>> {
    let max_value = max_value(m);
    let mut index: Vec<Entry<'a>> = m
        .tensors
        .iter()
        .zip(placed)
        .map(|(t, p)| {
            let mut e = tensor_entry(t, meta);
            p.apply(&mut e, t, max_value);
            e
        })
        .collect();
    let listed: Vec<usize> = m.tensors.iter().map(|t| t.value_index).collect();
    index.extend(byteless_entries(m, meta, &listed));
    index
}

/// The largest value index of `m`'s tensors, which sets the width of
/// their file names.
pub(super) fn max_value(m: &MethodInfo<'_>) -> u64 {
    m.tensors.iter().map(|t| t.value_index).max().unwrap_or(0) as u64
}
