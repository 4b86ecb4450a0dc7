//! An operator's attribute table as a list of named fields, in schema
//! order, for `graph.json` (as flatc prints them) and `code.txt`.

use serde_json::{Value, json};

use crate::schema::tosa as fb;

/// One attribute field's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Field<'a> {
    /// An `int32`.
    Int(i32),
    /// A `bool`.
    Bool(bool),
    /// An enum value: its name, or its number when the schema has none.
    Enum(Option<&'static str>, u32),
    /// An `[int32]`; `None` when absent.
    Ints(Option<Vec<i32>>),
    /// A `[ubyte]`; `None` when absent.
    Bytes(Option<&'a [u8]>),
    /// A `string`; `None` when absent.
    Str(Option<&'a str>),
}

impl Field<'_> {
    /// As flatc's `--strict-json --defaults-json` prints it; `None` for an
    /// absent vector or string, which flatc leaves out.
    pub fn json(&self) -> Option<Value> {
        Some(match self {
            Field::Int(x) => json!(x),
            Field::Bool(x) => json!(x),
            Field::Enum(name, n) => name.map_or_else(|| json!(n), |s| json!(s)),
            Field::Ints(v) => json!(v.as_ref()?),
            Field::Bytes(v) => json!(v.as_ref()?),
            Field::Str(v) => json!(v.as_ref()?),
        })
    }
}

fn dtype<'a>(t: fb::DType) -> Field<'a> {
    Field::Enum(t.variant_name(), t.0)
}

fn nan<'a>(t: fb::NanPropagationMode) -> Field<'a> {
    Field::Enum(t.variant_name(), t.0)
}

fn block<'a>(t: fb::BlockSize) -> Field<'a> {
    Field::Enum(t.variant_name(), t.0)
}

fn ints(v: Option<flatbuffers::Vector<'_, i32>>) -> Field<'_> {
    Field::Ints(v.map(|v| v.iter().collect()))
}

fn bytes(v: Option<flatbuffers::Vector<'_, u8>>) -> Field<'_> {
    Field::Bytes(v.map(|v| v.bytes()))
}

/// The fields of the pool, convolution and similar tables that share them.
macro_rules! fields {
    ($t:expr; $($name:literal => $value:expr),* $(,)?) => {{
        let t = $t;
        let _ = &t;
        vec![$(($name, $value(&t))),*]
    }};
}

/// The attribute's fields in schema order: `None` when the operator has no
/// attribute table (or one of a type this schema does not know), an empty
/// list for the many empty tables.
pub fn fields<'a>(op: fb::TosaOperator<'a>) -> Option<Vec<(&'static str, Field<'a>)>> {
    use fb::Attribute as A;
    op.attribute()?;
    let t = op.attribute_type();
    Some(match t {
        A::ArgMaxAttribute => fields!(op.attribute_as_arg_max_attribute()?;
            "axis" => |a: &fb::ArgMaxAttribute| Field::Int(a.axis()),
            "nan_mode" => |a: &fb::ArgMaxAttribute| nan(a.nan_mode())),
        A::AvgPool2dAttribute => fields!(op.attribute_as_avg_pool_2d_attribute()?;
            "kernel" => |a: &fb::AvgPool2dAttribute<'a>| ints(a.kernel()),
            "stride" => |a: &fb::AvgPool2dAttribute<'a>| ints(a.stride()),
            "pad" => |a: &fb::AvgPool2dAttribute<'a>| ints(a.pad()),
            "acc_type" => |a: &fb::AvgPool2dAttribute| dtype(a.acc_type())),
        A::AvgPool2dAdaptiveAttribute => fields!(op.attribute_as_avg_pool_2d_adaptive_attribute()?;
            "acc_type" => |a: &fb::AvgPool2dAdaptiveAttribute| dtype(a.acc_type())),
        A::Conv2dAttribute => fields!(op.attribute_as_conv_2d_attribute()?;
            "pad" => |a: &fb::Conv2dAttribute<'a>| ints(a.pad()),
            "stride" => |a: &fb::Conv2dAttribute<'a>| ints(a.stride()),
            "dilation" => |a: &fb::Conv2dAttribute<'a>| ints(a.dilation()),
            "local_bound" => |a: &fb::Conv2dAttribute| Field::Bool(a.local_bound()),
            "acc_type" => |a: &fb::Conv2dAttribute| dtype(a.acc_type())),
        A::Conv3dAttribute => fields!(op.attribute_as_conv_3d_attribute()?;
            "pad" => |a: &fb::Conv3dAttribute<'a>| ints(a.pad()),
            "stride" => |a: &fb::Conv3dAttribute<'a>| ints(a.stride()),
            "dilation" => |a: &fb::Conv3dAttribute<'a>| ints(a.dilation()),
            "local_bound" => |a: &fb::Conv3dAttribute| Field::Bool(a.local_bound()),
            "acc_type" => |a: &fb::Conv3dAttribute| dtype(a.acc_type())),
        A::DepthwiseConv2dAttribute => fields!(op.attribute_as_depthwise_conv_2d_attribute()?;
            "pad" => |a: &fb::DepthwiseConv2dAttribute<'a>| ints(a.pad()),
            "stride" => |a: &fb::DepthwiseConv2dAttribute<'a>| ints(a.stride()),
            "dilation" => |a: &fb::DepthwiseConv2dAttribute<'a>| ints(a.dilation()),
            "local_bound" => |a: &fb::DepthwiseConv2dAttribute| Field::Bool(a.local_bound()),
            "acc_type" => |a: &fb::DepthwiseConv2dAttribute| dtype(a.acc_type())),
        A::FFT2dAttribute => fields!(op.attribute_as_fft2d_attribute()?;
            "inverse" => |a: &fb::FFT2dAttribute| Field::Bool(a.inverse()),
            "local_bound" => |a: &fb::FFT2dAttribute| Field::Bool(a.local_bound())),
        A::MaxPool2dAttribute => fields!(op.attribute_as_max_pool_2d_attribute()?;
            "kernel" => |a: &fb::MaxPool2dAttribute<'a>| ints(a.kernel()),
            "stride" => |a: &fb::MaxPool2dAttribute<'a>| ints(a.stride()),
            "pad" => |a: &fb::MaxPool2dAttribute<'a>| ints(a.pad()),
            "nan_mode" => |a: &fb::MaxPool2dAttribute| nan(a.nan_mode())),
        A::MaxPool2dAdaptiveAttribute => fields!(op.attribute_as_max_pool_2d_adaptive_attribute()?;
            "nan_mode" => |a: &fb::MaxPool2dAdaptiveAttribute| nan(a.nan_mode())),
        A::RFFT2dAttribute => fields!(op.attribute_as_rfft2d_attribute()?;
            "local_bound" => |a: &fb::RFFT2dAttribute| Field::Bool(a.local_bound())),
        A::TransposeConv2dAttribute => fields!(op.attribute_as_transpose_conv_2d_attribute()?;
            "out_pad" => |a: &fb::TransposeConv2dAttribute<'a>| ints(a.out_pad()),
            "stride" => |a: &fb::TransposeConv2dAttribute<'a>| ints(a.stride()),
            "local_bound" => |a: &fb::TransposeConv2dAttribute| Field::Bool(a.local_bound()),
            "acc_type" => |a: &fb::TransposeConv2dAttribute| dtype(a.acc_type())),
        A::ClampAttribute => fields!(op.attribute_as_clamp_attribute()?;
            "min_val" => |a: &fb::ClampAttribute<'a>| bytes(a.min_val()),
            "max_val" => |a: &fb::ClampAttribute<'a>| bytes(a.max_val()),
            "nan_mode" => |a: &fb::ClampAttribute| nan(a.nan_mode())),
        A::ArithmeticRightShiftAttribute => {
            fields!(op.attribute_as_arithmetic_right_shift_attribute()?;
            "round" => |a: &fb::ArithmeticRightShiftAttribute| Field::Bool(a.round()))
        }
        A::MaximumAttribute => fields!(op.attribute_as_maximum_attribute()?;
            "nan_mode" => |a: &fb::MaximumAttribute| nan(a.nan_mode())),
        A::MinimumAttribute => fields!(op.attribute_as_minimum_attribute()?;
            "nan_mode" => |a: &fb::MinimumAttribute| nan(a.nan_mode())),
        A::ReduceAllAttribute => fields!(op.attribute_as_reduce_all_attribute()?;
            "axis" => |a: &fb::ReduceAllAttribute| Field::Int(a.axis())),
        A::ReduceAnyAttribute => fields!(op.attribute_as_reduce_any_attribute()?;
            "axis" => |a: &fb::ReduceAnyAttribute| Field::Int(a.axis())),
        A::ReduceMaxAttribute => fields!(op.attribute_as_reduce_max_attribute()?;
            "axis" => |a: &fb::ReduceMaxAttribute| Field::Int(a.axis()),
            "nan_mode" => |a: &fb::ReduceMaxAttribute| nan(a.nan_mode())),
        A::ReduceMinAttribute => fields!(op.attribute_as_reduce_min_attribute()?;
            "axis" => |a: &fb::ReduceMinAttribute| Field::Int(a.axis()),
            "nan_mode" => |a: &fb::ReduceMinAttribute| nan(a.nan_mode())),
        A::ReduceProductAttribute => fields!(op.attribute_as_reduce_product_attribute()?;
            "axis" => |a: &fb::ReduceProductAttribute| Field::Int(a.axis())),
        A::ReduceSumAttribute => fields!(op.attribute_as_reduce_sum_attribute()?;
            "axis" => |a: &fb::ReduceSumAttribute| Field::Int(a.axis())),
        A::ConcatAttribute => fields!(op.attribute_as_concat_attribute()?;
            "axis" => |a: &fb::ConcatAttribute| Field::Int(a.axis())),
        A::ReverseAttribute => fields!(op.attribute_as_reverse_attribute()?;
            "axis" => |a: &fb::ReverseAttribute| Field::Int(a.axis())),
        A::DimAttribute => fields!(op.attribute_as_dim_attribute()?;
            "axis" => |a: &fb::DimAttribute| Field::Int(a.axis())),
        A::ReshapeBlockScaledAttribute => {
            fields!(op.attribute_as_reshape_block_scaled_attribute()?;
            "block_size" => |a: &fb::ReshapeBlockScaledAttribute| block(a.block_size()))
        }
        A::RowGatherBlockScaledAttribute => {
            fields!(op.attribute_as_row_gather_block_scaled_attribute()?;
            "block_size" => |a: &fb::RowGatherBlockScaledAttribute| block(a.block_size()))
        }
        A::MatMulTBlockScaledAttribute => {
            fields!(op.attribute_as_mat_mul_tblock_scaled_attribute()?;
            "block_size" => |a: &fb::MatMulTBlockScaledAttribute| block(a.block_size()))
        }
        A::CastFromBlockScaledAttribute => {
            fields!(op.attribute_as_cast_from_block_scaled_attribute()?;
            "block_size" => |a: &fb::CastFromBlockScaledAttribute| block(a.block_size()))
        }
        A::CastToBlockScaledAttribute => fields!(op.attribute_as_cast_to_block_scaled_attribute()?;
            "block_size" => |a: &fb::CastToBlockScaledAttribute| block(a.block_size())),
        A::Conv2dBlockScaledAttribute => fields!(op.attribute_as_conv_2d_block_scaled_attribute()?;
            "block_size" => |a: &fb::Conv2dBlockScaledAttribute| block(a.block_size())),
        A::TransposeAttribute => fields!(op.attribute_as_transpose_attribute()?;
            "perms" => |a: &fb::TransposeAttribute<'a>| ints(a.perms())),
        A::ResizeAttribute => fields!(op.attribute_as_resize_attribute()?;
            "mode" => |a: &fb::ResizeAttribute| Field::Enum(a.mode().variant_name(), a.mode().0)),
        A::RescaleAttribute => fields!(op.attribute_as_rescale_attribute()?;
            "scale32" => |a: &fb::RescaleAttribute| Field::Bool(a.scale32()),
            "rounding_mode" => |a: &fb::RescaleAttribute| {
                Field::Enum(a.rounding_mode().variant_name(), a.rounding_mode().0)
            },
            "per_channel" => |a: &fb::RescaleAttribute| Field::Bool(a.per_channel()),
            "input_unsigned" => |a: &fb::RescaleAttribute| Field::Bool(a.input_unsigned()),
            "output_unsigned" => |a: &fb::RescaleAttribute| Field::Bool(a.output_unsigned())),
        A::CustomAttribute => fields!(op.attribute_as_custom_attribute()?;
            "operator_name" => |a: &fb::CustomAttribute<'a>| Field::Str(a.operator_name()),
            "domain_name" => |a: &fb::CustomAttribute<'a>| Field::Str(a.domain_name()),
            "implementation_attrs" => |a: &fb::CustomAttribute<'a>| bytes(a.implementation_attrs())),
        A::CondIfAttribute => fields!(op.attribute_as_cond_if_attribute()?;
            "then_graph" => |a: &fb::CondIfAttribute<'a>| Field::Str(a.then_graph()),
            "else_graph" => |a: &fb::CondIfAttribute<'a>| Field::Str(a.else_graph())),
        A::WhileLoopAttribute => fields!(op.attribute_as_while_loop_attribute()?;
            "cond_graph" => |a: &fb::WhileLoopAttribute<'a>| Field::Str(a.cond_graph()),
            "body_graph" => |a: &fb::WhileLoopAttribute<'a>| Field::Str(a.body_graph())),
        A::AssertEqualShapeAttribute => fields!(op.attribute_as_assert_equal_shape_attribute()?;
            "allow_broadcast" => |a: &fb::AssertEqualShapeAttribute| Field::Bool(a.allow_broadcast())),
        // Every other member the schema names is an empty table.
        _ if t.variant_name().is_some() && t != A::NONE => Vec::new(),
        _ => return None,
    })
}

/// The union member's name (`Conv2dAttribute`), `NONE`, or its number.
pub fn type_json(t: fb::Attribute) -> Value {
    t.variant_name().map_or_else(|| json!(t.0), |s| json!(s))
}
