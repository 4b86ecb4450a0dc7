//! The XNNPACK fixtures, shared by the delegate tests.

use super::{fixture, view, view_of};
use ptefs::view::View;

/// The delegate directory of the fixtures' one XNNPACK delegate.
pub const DELEGATE: &str = "methods/forward/delegates/0-XnnpackBackend";

/// The three XNNPACK fixtures, with the data file each needs.
pub fn fixtures() -> Vec<(&'static str, View)> {
    vec![
        ("mv2_xnnpack.pte", view("mv2_xnnpack.pte")),
        ("quant_xnnpack.pte", view("quant_xnnpack.pte")),
        (
            "xnnpack_external.pte",
            view_of(
                &[fixture("xnnpack_external.pte")],
                &[fixture("xnnpack_external.ptd")],
            ),
        ),
    ]
}
